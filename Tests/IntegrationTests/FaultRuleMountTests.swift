internal import CLinux
import Foundation
import Glibc
import PurgeCore
import PurgeSys
import Synchronization
import XCTest

/// Fault rules on a real mount: the three doors (fault add, faults=FILE, and
/// the argument vector a scenario passes), every action, the counting flags,
/// the seed, the process filters, clearing, the log and the counters.
final class FaultRuleMountTests: PurgefsCommandTestCase {
    override var mountsInSetUp: Bool { false }

    private func mount(_ options: [String] = []) throws {
        try fixture.mount(options: mountOptions + options)
    }

    @discardableResult
    private func add(_ rule: String...) throws -> Int {
        let output = try Subprocess.run([bin, "fault", "add", mnt] + rule, timeout: 30)
        XCTAssertEqual(output.status, 0, "\(output)")
        let words = output.stdout.split(separator: " ")
        XCTAssertTrue(output.stdout.hasPrefix("Added fault rule "), output.stdout)
        return try XCTUnwrap(Int(words[3].dropLast()), output.stdout)
    }

    private func listing() throws -> [[String: Any]] {
        let text = try succeed("fault", "list", mnt, "--json")
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]], text)
    }

    private func faultLog() throws -> [[String: Any]] {
        try succeed("log", mnt, "--faults", "--json").split(separator: "\n").map { try object(String($0)) }
    }

    /// pwrite of `bytes` at `offset`: the count written, or -errno.
    private func write(_ fd: Int32, _ bytes: [UInt8], at offset: Int) -> Int {
        let count = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) }
        return count < 0 ? -Int(errno) : count
    }

    private func openFails(_ path: String) -> Int32? {
        let fd = open(path, O_RDONLY)
        if fd < 0 { return errno }
        close(fd)
        return nil
    }

    func testErrnoAfterAndTimesCountTheMatchingCallsAndAreLogged() throws {
        try mount()
        let id = try add("--op", "write", "--path", "Documents/*.db", "--errno", "EIO", "--after", "2", "--times", "1")
        let fd = open(mnt + "/Documents/a.db", O_WRONLY | O_CREAT, 0o644)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        let other = open(mnt + "/Documents/b.txt", O_WRONLY | O_CREAT, 0o644)
        XCTAssertEqual(write(other, [9], at: 0), 1, "a path the glob does not match")
        close(other)
        let results = (0..<4).map { write(fd, [UInt8(0x41 + $0)], at: $0) }
        XCTAssertEqual(results, [1, 1, -Int(EIO), 1], "two let through, the third fails, then the rule has fired its once")
        XCTAssertEqual(try String(contentsOfFile: fixture.container + "/Documents/a.db", encoding: .utf8), "AB\0D",
                       "the failed write wrote nothing")

        let rules = try listing()
        XCTAssertEqual(rules.count, 1)
        XCTAssertEqual(rules[0]["id"] as? Int, id)
        XCTAssertEqual(rules[0]["matched"] as? Int, 4)
        XCTAssertEqual(rules[0]["fired"] as? Int, 1)
        let log = try faultLog()
        XCTAssertEqual(log.count, 1)
        XCTAssertEqual(log.first?["op"] as? String, "write")
        XCTAssertEqual(log.first?["path"] as? String, "Documents/a.db")
        XCTAssertEqual(log.first?["rule"] as? Int, id)
        XCTAssertEqual(log.first?["result"] as? String, "EIO")
        XCTAssertEqual(log.first?["pid"] as? Int32, getpid())
        let table = try succeed("log", mnt, "--faults")
        XCTAssertTrue(table.contains("Documents/a.db") && table.contains("1 fault injected."), table)
        let prometheus = try succeed("metrics", mnt, "--prometheus").split(separator: "\n")
        XCTAssertEqual(prometheus.first { $0.hasPrefix("purgefs_fault_rule_matched_total{") }?.split(separator: " ").last, "4")
        XCTAssertEqual(prometheus.first { $0.hasPrefix("purgefs_fault_rule_fired_total{") }?.split(separator: " ").last, "1")
    }

    func testReadsOfOneFileFailEvenWhenCached() throws {
        try mount()
        XCTAssertEqual(try String(contentsOfFile: mnt + "/Documents/report.txt", encoding: .utf8).count, 20_000, "now in the page cache")
        try add("--op", "read", "--path", "Documents/report.txt", "--errno", "EIO")
        let result = try Subprocess.run(["cat", mnt + "/Documents/report.txt"], timeout: 30)
        XCTAssertNotEqual(result.status, 0)
        XCTAssertTrue(result.stderr.contains("Input/output error"), "\(result)")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: mnt + "/other/o.txt")).count, 500, "another file reads")
    }

    /// A read-only file's close sends no flush (nothing to flush), unless a
    /// flush rule could match the file when it was opened.
    func testAReadOnlyCloseIsFlushedWhereAFlushRuleCouldMatchItsOpen() throws {
        try mount()
        let path = mnt + "/Documents/report.txt"
        let early = open(path, O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(early, 0)
        try add("--op", "flush", "--path", "Documents/report.txt", "--errno", "EIO")
        XCTAssertEqual(close(early) == 0 ? 0 : errno, 0, "opened read-only before the rule: its close is not flushed")
        let late = open(path, O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(late, 0)
        XCTAssertEqual(Errno.name(close(late) == 0 ? 0 : errno), Errno.name(EIO), "a reader opened after the rule")
        let writer = open(path, O_WRONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(writer, 0)
        XCTAssertEqual(Errno.name(close(writer) == 0 ? 0 : errno), Errno.name(EIO), "a writer")
        let other = open(mnt + "/other/o.txt", O_RDWR | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(other, 0)
        XCTAssertEqual(close(other), 0, "a path the rule does not match")
    }

    func testShortWriteWritesAndReturnsPartOfTheCount() throws {
        try mount()
        try add("--op", "write", "--path", "**/*.bin", "--short-write", "--times", "1")
        let fd = open(mnt + "/Documents/x.bin", O_WRONLY | O_CREAT, 0o644)
        defer { close(fd) }
        let data = (0..<1000).map { UInt8($0 % 251) }
        XCTAssertEqual(write(fd, data, at: 0), 500)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: fixture.container + "/Documents/x.bin")), Data(data[..<500]),
                       "only the part reported was written")
        XCTAssertEqual(write(fd, Array(data[500...]), at: 500), 500, "the rest, once the rule is done")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: mnt + "/Documents/x.bin")), Data(data))
        XCTAssertEqual(try faultLog().first?["result"] as? String, "wrote 500 of 1000 bytes")
    }

    func testADelayHoldsTheCallButNotTheOthers() throws {
        try mount()
        try add("--op", "fsync", "--path", "Documents/slow.db", "--delay", "3s")
        let fd = open(mnt + "/Documents/slow.db", O_WRONLY | O_CREAT, 0o644)
        defer { close(fd) }
        let outcome = CallOutcome()
        let thread = Thread {
            let result = fsync(fd)
            outcome.result.withLock { $0 = result }
        }
        thread.start()
        // While the fsync is held, other requests are answered.
        let deadline = Date().addingTimeInterval(20)
        var others = 0
        while outcome.result.withLock({ $0 }) == nil && Date() < deadline {
            var status = stat()
            XCTAssertEqual(stat(mnt + "/Documents/report.txt", &status), 0)
            XCTAssertEqual(openFails(mnt + "/other/o.txt"), nil)
            if outcome.result.withLock({ $0 }) == nil { others += 1 }
            usleep(20_000)
        }
        XCTAssertEqual(outcome.result.withLock { $0 }, 0, "the delayed fsync returns, and runs as usual")
        XCTAssertGreaterThan(others, 3, "other calls were answered while it was held")
        XCTAssertEqual(try faultLog().first?["result"] as? String, "delayed 3s")
    }

    /// The watchdog knows reads too: a read held by a delay longer than its
    /// threshold is named in the daemon log (read replies on its own, and
    /// was the one request the watchdog never saw).
    func testTheWatchdogNamesAHeldRead() throws {
        try fixture.mount(options: mountOptions, launcher: ["env", "PURGEFS_WATCHDOG_SECONDS=1"])
        try add("--op", "read", "--path", "Documents/report.txt", "--delay", "3s")
        XCTAssertEqual(readBytes(mnt + "/Documents/report.txt"), Array(repeating: 0x61, count: 20_000))
        XCTAssertTrue(eventually(timeout: 10) { self.fixture.daemonStderrText().contains("watchdog: a read request from pid \(getpid())") },
                      fixture.daemonStderrText())
        XCTAssertEqual(try faultLog().first?["result"] as? String, "delayed 3s")
    }

    /// Over FUSE over io_uring the kernel gives a CPU's requests to that
    /// CPU's ring threads only: delays may hold half of them, and the rest
    /// of that CPU's calls are still answered. Eight fsyncs from CPU 0 meet a
    /// delay rule; some are held, the others run undelayed (logged so), and
    /// opens from CPU 0 are answered while the held ones wait.
    func testDelaysOverTheRingLeaveEachCPUThreadsToAnswer() throws {
        try KernelRing.enable(for: self)
        try mount()
        try KernelRing.requireRing(at: mnt)
        try add("--op", "fsync", "--path", "Documents/slow*", "--delay", "4s")
        let descriptors = (0..<8).map { open(mnt + "/Documents/slow\($0)", O_WRONLY | O_CREAT, 0o644) }
        defer { descriptors.forEach { close($0) } }
        XCTAssertTrue(descriptors.allSatisfy { $0 >= 0 })
        let outcomes = descriptors.map { _ in CallOutcome() }
        let threads = zip(descriptors, outcomes).map { fd, outcome in
            Thread {
                Self.runOnCPU0()
                let result = fsync(fd)
                outcome.result.withLock { $0 = result }
            }
        }
        threads.forEach { $0.start() }
        let answered = Atomic<Int>(0)
        let report = mnt + "/Documents/report.txt"
        let prober = Thread {
            Self.runOnCPU0()
            let deadline = Date().addingTimeInterval(20)
            while outcomes.contains(where: { $0.result.withLock { $0 } == nil }) && Date() < deadline {
                // An open always reaches the daemon (a stat may not: the kernel caches attributes).
                let fd = open(report, O_RDONLY)
                if fd >= 0 { close(fd) }
                if fd >= 0, outcomes.contains(where: { $0.result.withLock { $0 } == nil }) {
                    answered.add(1, ordering: .relaxed)
                }
                usleep(20_000)
            }
        }
        prober.start()
        let deadline = Date().addingTimeInterval(30)
        while outcomes.contains(where: { $0.result.withLock { $0 } == nil }) && Date() < deadline { usleep(50_000) }
        XCTAssertTrue(outcomes.allSatisfy { $0.result.withLock { $0 } == 0 }, "every fsync returns, and succeeds")
        XCTAssertGreaterThan(answered.load(ordering: .relaxed), 3, "CPU 0's other calls were answered while fsyncs were held")
        let results = try faultLog().compactMap { $0["result"] as? String }
        let held = results.filter { $0 == "delayed 4s" }.count
        let passed = results.filter { $0.hasPrefix("not delayed: half of this CPU's ring threads") }.count
        XCTAssertEqual(held + passed, 8, "\(results)")
        XCTAssertGreaterThan(held, 0, "\(results)")
        XCTAssertGreaterThan(passed, 0, "\(results)")
    }

    /// Pins the calling thread to CPU 0: its requests go to ring queue 0.
    private static func runOnCPU0() {
        XCTAssertEqual(clinux_pin_thread(0), 0)
    }

    func testTheSameSeedRepeatsARunExactlyAsTheCoreDrawsIt() throws {
        try mount()
        func run() throws -> [Bool] {
            try add("--op", "open", "--path", "Documents/report.txt", "--errno", "EACCES", "--probability", "0.5", "--seed", "1234")
            defer { _ = try? succeed("fault", "clear", mnt) }
            return (0..<40).map { _ in openFails(mnt + "/Documents/report.txt") == EACCES }
        }
        let first = try run(), second = try run()
        XCTAssertEqual(first, second)
        var book = FaultBook()
        book.add(try FaultRule(arguments: ["--op", "open", "--path", "**", "--errno", "EIO", "--probability", "0.5", "--seed", "1234"]), seed: 0)
        let expected = (0..<40).map { _ in book.decide(FaultCall(operations: FaultCallOperations(.open), path: "x", pid: 1)) != nil }
        XCTAssertEqual(first, expected, "the daemon draws as the core does")
        XCTAssertTrue(first.contains(true) && first.contains(false))
    }

    func testPidAndCommandLimitTheRule() throws {
        try mount()
        try add("--op", "open", "--path", "other/*", "--errno", "EACCES", "--comm", "cat")
        let cat = try Subprocess.run(["cat", mnt + "/other/o.txt"], timeout: 30)
        XCTAssertTrue(cat.stderr.contains("Permission denied"), "\(cat)")
        let head = try Subprocess.run(["head", "-c", "3", mnt + "/other/o.txt"], timeout: 30)
        XCTAssertEqual(head.status, 0, "\(head)")
        XCTAssertEqual(openFails(mnt + "/other/o.txt"), nil)
        try succeed("fault", "clear", mnt)

        try add("--op", "open", "--path", "other/*", "--errno", "ENOENT", "--pid", String(getpid()))
        XCTAssertEqual(openFails(mnt + "/other/o.txt"), ENOENT, "this process")
        XCTAssertEqual(try Subprocess.run(["cat", mnt + "/other/o.txt"], timeout: 30).status, 0, "another process")
    }

    func testClearOneRuleOrAll() throws {
        try mount()
        let first = try add("--op", "open", "--path", "Documents/report.txt", "--errno", "EIO")
        let second = try add("--op", "open", "--path", "other/o.txt", "--errno", "EROFS")
        XCTAssertEqual(openFails(mnt + "/Documents/report.txt"), EIO)
        XCTAssertEqual(try succeed("fault", "clear", mnt, String(first)), "Cleared fault rule \(first).\n")
        XCTAssertEqual(openFails(mnt + "/Documents/report.txt"), nil)
        XCTAssertEqual(openFails(mnt + "/other/o.txt"), EROFS)
        try assertRejected(["fault", "clear", mnt, String(first)], status: 1, mentioning: ["no fault rule \(first)"])
        XCTAssertEqual(try listing().map { $0["id"] as? Int }, [second])
        XCTAssertEqual(try succeed("fault", "clear", mnt), "Cleared 1 fault rule.\n")
        XCTAssertEqual(openFails(mnt + "/other/o.txt"), nil)
        XCTAssertEqual(try succeed("fault", "list", mnt), "No fault rules on \(mnt).\n")
    }

    func testAnyOperationOnEveryPathStillLetsTheCommandsThrough() throws {
        try mount()
        try add("--op", "any", "--path", "**", "--errno", "EIO")
        var status = stat()
        XCTAssertEqual(stat(mnt + "/Documents/x-new", &status), -1)
        XCTAssertEqual(errno, EIO)
        XCTAssertEqual(try listing().count, 1, "user.purgefs.* requests are never faulted")
        try succeed("fault", "clear", mnt)
        XCTAssertEqual(openFails(mnt + "/Documents/report.txt"), nil)
    }

    func testRulesFileLoadsAtMount() throws {
        let rules = fixture.base + "/rules"
        try """
            # the database fails its second write; reads of notes are slow
            --op write --path 'Documents/*.db' --errno ENOSPC --after 1
            --op open --path "other/o.txt" --errno EACCES
            """.write(toFile: rules, atomically: true, encoding: .utf8)
        try mount(["faults=" + rules])
        let listed = try listing()
        XCTAssertEqual(listed.map { $0["op"] as? String }, ["write", "open"])
        XCTAssertEqual(openFails(mnt + "/other/o.txt"), EACCES)
        let fd = open(mnt + "/Documents/a.db", O_WRONLY | O_CREAT, 0o644)
        defer { close(fd) }
        XCTAssertEqual(write(fd, [1], at: 0), 1)
        XCTAssertEqual(write(fd, [2], at: 1), -Int(ENOSPC))
    }

    func testABadRulesFileIsRefusedBeforeMounting() throws {
        let rules = fixture.base + "/rules"
        try "--op write --path a --errno EIO\n\n--op write --path b --errno ENOPE\n".write(toFile: rules, atomically: true, encoding: .utf8)
        try assertRejected(["mount", fixture.container, mnt, "-o", "faults=" + rules], status: 1,
                           mentioning: ["faults=\(rules): line 3: --errno 'ENOPE'"])
        XCTAssertTrue(MountTable.mounts(at: mnt).isEmpty, "nothing was mounted")
        try assertRejected(["mount", fixture.container, mnt, "-o", "faults=" + fixture.base + "/none"], status: 1,
                           mentioning: ["cannot read the rules file"])
        try assertRejected(["mount", fixture.container, mnt, "-o", "faults=relative"], status: 64, mentioning: ["faults"])
    }

    func testBadRulesAreOneLineAndExit64() throws {
        try mount()
        let cases: [([String], String)] = [
            (["--op", "wirte", "--path", "a", "--errno", "EIO"], "unknown operation 'wirte'"),
            (["--op", "write", "--path", "a", "--errno", "EWHAT"], "unknown errno name"),
            (["--op", "write", "--path", "a[", "--errno", "EIO"], "without its"),
            (["--op", "write", "--path", "a", "--errno", "EIO", "--probability", "2"], "not a number from 0 to 1"),
            (["--op", "write", "--path", "a", "--delay", "soon"], "not a duration"),
            (["--op", "write", "--path", "a", "--errno", "EIO", "--after", "-2"], "--after"),
            (["--op", "write", "--path", "a", "--errno", "EIO", "--times", "0"], "--times"),
        ]
        for (rule, words) in cases {
            try assertRejected(["fault", "add", mnt] + rule, status: 64, mentioning: [words])
        }
        try assertRejected(["fault", "add"], status: 64, mentioning: ["MOUNTPOINT"])
        try assertRejected(["fault", "frob", mnt], status: 64, mentioning: ["unknown action"])
        try assertRejected(["fault", "clear", mnt, "x"], status: 64, mentioning: ["not a rule ID"])
        XCTAssertEqual(try listing().count, 0)
    }

    func testOnlyTheOwnerOrRootMayChangeTheRules() throws {
        try mount(["allow_other"])
        XCTAssertEqual(chmod(mnt, 0o755), 0)
        let id = try add("--op", "open", "--path", "other/o.txt", "--errno", "EIO")
        let asOther = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", bin]
        let adding = try Subprocess.run(asOther + ["fault", "add", mnt, "--op", "read", "--path", "**", "--errno", "EIO"], timeout: 30)
        XCTAssertEqual(adding.status, 1, "\(adding)")
        XCTAssertTrue(adding.stderr.contains("only the mount's owner or root may change the fault rules"), "\(adding)")
        let clearing = try Subprocess.run(asOther + ["fault", "clear", mnt], timeout: 30)
        XCTAssertEqual(clearing.status, 1, "\(clearing)")
        let listed = try Subprocess.run(asOther + ["fault", "list", mnt], timeout: 30)
        XCTAssertEqual(listed.status, 0, "anyone may look: \(listed)")
        XCTAssertEqual(try listing().map { $0["id"] as? Int }, [id], "the rule is still there, and no other")
    }

    /// A rule making the third write to a database fail with EIO: SQLite
    /// reports the error, and the database is intact with what was committed.
    func testSQLiteSeesTheErrorAndKeepsItsDatabase() throws {
        try mount()
        let database = mnt + "/Documents/app.db"
        func sqlite(_ sql: String) throws -> CommandResult {
            try Subprocess.run(["sqlite3", database, "PRAGMA synchronous=FULL;" + sql], timeout: 60)
        }
        let setup = try sqlite("CREATE TABLE t(x TEXT); INSERT INTO t VALUES('one'); INSERT INTO t VALUES('two');")
        XCTAssertEqual(setup.status, 0, "\(setup)")
        try add("--op", "write", "--path", "Documents/app.db*", "--errno", "EIO", "--after", "2", "--times", "1")
        let failing = try sqlite("BEGIN; INSERT INTO t VALUES(randomblob(20000)); INSERT INTO t VALUES('three'); COMMIT;")
        XCTAssertNotEqual(failing.status, 0, "\(failing)")
        XCTAssertTrue(failing.stderr.contains("disk I/O error"), "\(failing)")
        let fired = try listing().first?["fired"] as? Int
        XCTAssertEqual(fired, 1)
        try succeed("fault", "clear", mnt)
        let check = try sqlite("PRAGMA integrity_check; SELECT group_concat(x) FROM t WHERE typeof(x) = 'text';")
        XCTAssertEqual(check.status, 0, "\(check)")
        XCTAssertEqual(check.stdout, "ok\none,two\n", "\(check)")
    }
}

/// What a thread's call returned, once it has.
private final class CallOutcome: Sendable {
    let result = Mutex<Int32?>(nil)
}
