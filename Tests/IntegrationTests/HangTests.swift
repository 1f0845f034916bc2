import Foundation
import Glibc
import PurgeCore
import XCTest

/// Ways to hang a mount for good, on ext4 (linked clones): each test does
/// what once left the daemon unable to answer, and asserts that every
/// process got its answer and the mount still unmounts. A hung mount is
/// aborted in teardown (`purgefs unmount --force`), so a failure here
/// fails this test only, not the run. This process touches the mount only
/// through subprocesses with deadlines: a hung mount would take it down too.
final class HangTests: Ext4ImageTestCase {
    static let cacheFiles = 5_000
    var caches: String { m + "/Library/Caches/d" }

    /// Rounds of `kill -9` in the stress test, and seconds of load in each:
    /// `scripts/stress` raises both for a long hunt.
    static var stressRounds: Int { environmentNumber("PURGEFS_STRESS_ROUNDS") ?? 2 }
    static var stressSeconds: Int { environmentNumber("PURGEFS_STRESS_SECONDS") ?? 8 }

    override func setUpWithError() throws {
        try super.setUpWithError()
        // Runs before the fixture's own teardown: a hung mount could not be unmounted by it.
        addTeardownBlock { [self] in
            guard MountTable.isMounted(m) else { return }
            let probe = try? Subprocess.run(["stat", "-f", m], timeout: 5)
            if probe?.status != 0 {
                XCTFail("teardown: the mount does not answer (\(probe.map { $0.timedOut ? "timed out" : $0.stderr } ?? "?")); aborting it")
                _ = try? Subprocess.run([fixture.binary, "unmount", "--force", m], timeout: 30)
            }
        }
    }

    override func prepareContainer() throws {
        guard name.contains("ACL") else { return }
        let directory = container + "/Library/Caches/d"
        XCTAssertEqual(mkdirAll(directory), 0)
        let block = Data(repeating: 0x5A, count: 4096)
        for index in 0..<Self.cacheFiles {
            try block.write(to: URL(fileURLWithPath: directory + "/f\(index)"))
        }
    }

    /// The issue's first recipe: `setfacl` in a loop on a directory whose
    /// files a purge removes. Each purge notice takes the directory's lock in
    /// the kernel, which the `setfacl` holds while its request waits on us;
    /// that request once waited for the notice in turn.
    func testACLChangesDuringAPurgeLeaveTheMountUsable() throws {
        // The kernel learns every name, so the purge has a notice to send for each.
        let listed = try Subprocess.run(["ls", "-l", caches], timeout: 120)
        XCTAssertEqual(listed.status, 0, "\(listed)")
        let loop = try Subprocess.spawn(
            ["sh", "-c", "while :; do setfacl -m u:nobody:r '\(caches)' && setfacl -b '\(caches)' || exit 1; done"],
            stdoutPath: fixture.base + "/acl.out", stderrPath: fixture.base + "/acl.err")
        defer { if loop.isRunning { kill(loop.processIdentifier, SIGKILL) } }
        let purge = try Subprocess.run(["setfattr", "-n", pf("purge"), "-v", "all", m], timeout: 120)
        XCTAssertEqual(purge.status, 0, "\(purge)")
        XCTAssertTrue(loop.isRunning, "the setfacl loop stopped: \((try? String(contentsOfFile: fixture.base + "/acl.err", encoding: .utf8)) ?? "")")
        kill(loop.processIdentifier, SIGKILL)
        XCTAssertTrue(Subprocess.wait(loop, timeout: 30), "the setfacl loop does not exit")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: container + "/Library/Caches/d").count, 0,
                       "the purge left files in the backing store")
        XCTAssertTrue(eventually(timeout: 30) { (try? Subprocess.run(["ls", "-A", caches], timeout: 10))?.stdout == "" },
                      "the mount still lists purged files")
        let setfacl = try Subprocess.run(["setfacl", "-m", "u:nobody:r", caches], timeout: 30)
        XCTAssertEqual(setfacl.status, 0, "\(setfacl)")
        XCTAssertEqual(unmountPurgefs(), [], "unmounting after the purge")
    }

    /// The issue's second recipe: a clone that fails half-way (its source
    /// was unlinked) once left the source's writer with a read-only stand-in
    /// for good, and its next write spinning in the daemon forever.
    func testAFailedCloneLeavesItsSourceWritable() throws {
        XCTAssertEqual(try Subprocess.run(["mkdir", m + "/data"], timeout: 10).status, 0)
        let script = """
            import os, sys
            F, G = sys.argv[1] + "/data/F", sys.argv[1] + "/data/G"
            w = os.open(F, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.write(w, b"x" * (1 << 20))
            r = os.open(F, os.O_RDONLY)
            g = os.open(G, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.unlink(F)
            assert os.copy_file_range(r, g, 1 << 20) == 1 << 20
            os.write(w, b"y" * 4096)
            os.fsync(w)
            os.lseek(r, 0, os.SEEK_SET)
            data = os.read(r, 2 << 20)
            assert data == b"x" * (1 << 20) + b"y" * 4096, len(data)
            print("written")
            """
        let run = try Subprocess.run(["python3", "-c", script, m], timeout: 60)
        XCTAssertFalse(run.timedOut, "the writer's next write never returned")
        XCTAssertEqual(run.status, 0, "\(run)")
        XCTAssertEqual(run.stdout, "written\n")
        assertReads("data/G", Data(repeating: UInt8(ascii: "x"), count: 1 << 20), "the copy")
    }

    /// A hunt for more: writers with fsync, clones, renames, ACL changes,
    /// purges and squeezes on the same few files, every operation with a
    /// deadline (`scripts/lib/hangload.py`), and the daemon killed with
    /// `kill -9` in the middle of it: each time the daemon must be gone
    /// within seconds, and every process touching the mount get an answer.
    /// After the last round the container is remounted, loaded without a
    /// kill, and its accounting is checked against a walk.
    func testKill9UnderLoadNeverHangs() throws {
        try assertKill9UnderLoadNeverHangs(rounds: Self.stressRounds)
    }

    /// The same over FUSE over io_uring: the killed daemon's rings go with
    /// it (the kernel cancels their entries), and the guard aborts the
    /// connection, so requests queued for the ring get their answer too.
    func testKill9UnderLoadNeverHangsOverTheRing() throws {
        try KernelRing.enable(for: self)
        try assertKill9UnderLoadNeverHangs(rounds: 1, ring: true)
    }

    private func assertKill9UnderLoadNeverHangs(rounds: Int, ring: Bool = false) throws {
        // A simulated device, so that squeezes (external usage) make the monitor purge.
        let options = ["capacity=400M"]
        XCTAssertEqual(unmountPurgefs(), [])
        try mountPurgefs(options: options)
        if ring { try KernelRing.requireRing(at: m) }
        for round in 1...rounds {
            try withLoad(seconds: 600, label: "round \(round)") { load, progress in
                XCTAssertTrue(eventually(timeout: 60) { progress() >= 200 },
                              "round \(round): the load made no progress: \(loadOutput())\ndaemon: \(daemonLog())")
                let daemons = fixture.ownProcesses()
                XCTAssertFalse(daemons.isEmpty, "round \(round): no daemon to kill")
                for pid in daemons { kill(pid, SIGKILL) }
                XCTAssertTrue(eventually(timeout: 10) { daemons.allSatisfy { access("/proc/\($0)", F_OK) != 0 } },
                              "round \(round): the daemon outlived kill -9 by 10 s: \(daemons.map(Self.processState))")
                XCTAssertTrue(Subprocess.wait(load, timeout: 60), "round \(round): a process touching the mount got no answer")
            }
            XCTAssertEqual(unmountPurgefs(), [], "round \(round): cleaning the dead mount")
            try mountPurgefs(options: options)
        }
        try withLoad(seconds: Self.stressSeconds, label: "the last round") { load, _ in
            XCTAssertTrue(Subprocess.wait(load, timeout: Double(Self.stressSeconds) + 60), "the load did not finish")
        }
        // What a round left in flight is settled at the next mount.
        XCTAssertEqual(unmountPurgefs(), [])
        try mountPurgefs(options: options)
        assertAccounting("after \(rounds) kills under load")
    }

    /// A daemon that dies of a failed precondition in the middle of a
    /// request (a trap: Swift's runtime writes its backtrace first, which
    /// takes a second or two) frees the mount as `kill -9` does: the caller
    /// gets an error, the mount answers `ENOTCONN`, it unmounts, and the
    /// data written before is there.
    func testADaemonThatTrapsMidRequestFreesTheMount() throws {
        #if !DEBUG
        throw XCTSkip("trap points are in debug builds only")
        #else
        XCTAssertEqual(unmountPurgefs(), [])
        daemonEnvironment["PURGEFS_TRAP_AT"] = "clone-linked"
        defer { daemonEnvironment["PURGEFS_TRAP_AT"] = nil }
        try mountPurgefs()
        let written = try Subprocess.run(["sh", "-c", "head -c 1048576 /dev/urandom > '\(m)/f' && sync '\(m)/f'"], timeout: 30)
        XCTAssertEqual(written.status, 0, "\(written)")
        let copy = try Subprocess.run(["cp", m + "/f", m + "/g"], timeout: 60)
        XCTAssertFalse(copy.timedOut, "the copy the daemon trapped in never got an answer")
        XCTAssertNotEqual(copy.status, 0, "the copy succeeded: the trap point was not reached")
        XCTAssertTrue(daemonLogText().contains("trap point clone-linked"), "no trap in the daemon's log")
        let probe = try Subprocess.run(["stat", m], timeout: 30)
        XCTAssertFalse(probe.timedOut, "the mount does not answer after its daemon died")
        XCTAssertTrue(probe.stderr.contains("not connected"), "\(probe)")
        XCTAssertEqual(unmountPurgefs(), [], "unmounting the dead mount")
        XCTAssertEqual(FileManager.default.contents(atPath: container + "/f")?.count, 1 << 20, "the file written before the trap")
        #endif
    }

    /// The watchdog names a request that has waited long: a write stuck on a
    /// frozen backing filesystem (`fsfreeze`), with the state directory (and
    /// so the daemon log) elsewhere.
    func testTheWatchdogNamesARequestStuckOnAFrozenDisk() throws {
        let state = fixture.base + "/state"
        XCTAssertEqual(unmountPurgefs(), [])
        var environment = ProcessInfo.processInfo.environment
        environment["PURGEFS_WATCHDOG_SECONDS"] = "1"
        let mounted = try Subprocess.run([fixture.binary, "mount", container, m, "-o", "state=" + state],
                                         timeout: 30, environment: environment)
        XCTAssertEqual(mounted.status, 0, "\(mounted)")
        XCTAssertEqual(try Subprocess.run(["sh", "-c", "echo before > '\(m)/file'"], timeout: 10).status, 0)
        XCTAssertEqual(try Subprocess.run(["fsfreeze", "-f", volume], timeout: 30).status, 0)
        var thawed = false
        defer { if !thawed { _ = try? Subprocess.run(["fsfreeze", "-u", volume], timeout: 30) } }
        let writer = try Subprocess.spawn(["sh", "-c", "echo during >> '\(m)/file'"],
                                          stdoutPath: fixture.base + "/writer.out", stderrPath: fixture.base + "/writer.err")
        let log = state + "/daemon.log"
        let named = eventually(timeout: 30) {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("watchdog: a write_buf request from pid")
        }
        XCTAssertTrue(writer.isRunning, "the write finished on a frozen filesystem")
        XCTAssertEqual(try Subprocess.run(["fsfreeze", "-u", volume], timeout: 30).status, 0)
        thawed = true
        XCTAssertTrue(named, "no watchdog line in the daemon log: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        let line = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").first { $0.contains("watchdog:") }
        XCTAssertTrue(line?.contains("unanswered after") == true && line?.contains("thread ") == true, "\(line ?? "")")
        XCTAssertTrue(Subprocess.wait(writer, timeout: 30), "the write did not finish once the filesystem thawed")
        XCTAssertEqual(try Subprocess.run(["cat", m + "/file"], timeout: 10).stdout, "before\nduring\n")
    }

    /// Stopped (`SIGTERM`) while a ring thread is inside a handler (a write
    /// stuck on a frozen backing filesystem): the daemon stops its ring
    /// before libfuse's unmount closes the connection's descriptor, so the
    /// write, done once the filesystem thaws, is answered as done. (Stopped
    /// after the unmount, the thread committed to a closed descriptor and
    /// the writer got an error for bytes that were written.)
    func testStoppingTheDaemonAnswersTheRequestsItsRingThreadsServe() throws {
        try KernelRing.enable(for: self)
        let state = fixture.base + "/state"
        XCTAssertEqual(unmountPurgefs(), [])
        let mounted = try Subprocess.run([fixture.binary, "mount", container, m, "-o", "state=" + state], timeout: 30)
        XCTAssertEqual(mounted.status, 0, "\(mounted)")
        try KernelRing.requireRing(at: m)
        XCTAssertEqual(try Subprocess.run(["sh", "-c", "echo before > '\(m)/file'"], timeout: 10).status, 0)
        let daemons = fixture.ownProcesses()
        XCTAssertEqual(daemons.count, 1, "one daemon: \(daemons)")
        let daemon = try XCTUnwrap(daemons.first)
        XCTAssertTrue(Self.hasGuard(daemon), "the daemon's connection guard runs")
        XCTAssertEqual(try Subprocess.run(["fsfreeze", "-f", volume], timeout: 30).status, 0)
        var thawed = false
        defer { if !thawed { _ = try? Subprocess.run(["fsfreeze", "-u", volume], timeout: 30) } }
        let output = fixture.base + "/writer.out"
        let writer = try Subprocess.spawn(["sh", "-c", "echo during >> '\(m)/file' && echo written"],
                                          stdoutPath: output, stderrPath: fixture.base + "/writer.err")
        // The write waits in a ring thread's handler (one thread of the daemon in the kernel's freeze).
        XCTAssertTrue(eventually(timeout: 30) { Self.threadsWaitingOnTheFreeze(of: daemon) > 0 }, "the write never reached the daemon")
        kill(daemon, SIGTERM)
        // The daemon is past its loop (its guard stopped) and its main thread waits for the ring thread.
        XCTAssertTrue(eventually(timeout: 30) {
            !Self.hasGuard(daemon) && Self.mainThreadWaitsOnAFutex(daemon)
        }, "the daemon never reached its teardown")
        XCTAssertTrue(writer.isRunning, "the write finished on a frozen filesystem")
        XCTAssertEqual(try Subprocess.run(["fsfreeze", "-u", volume], timeout: 30).status, 0)
        thawed = true
        XCTAssertTrue(Subprocess.wait(writer, timeout: 30), "the write got no answer")
        XCTAssertEqual(writer.terminationStatus, 0,
                       "the writer's answer: \((try? String(contentsOfFile: fixture.base + "/writer.err", encoding: .utf8)) ?? "")")
        XCTAssertTrue(eventually(timeout: 30) { access("/proc/\(daemon)", F_OK) != 0 }, "the daemon did not exit")
        XCTAssertEqual(try String(contentsOfFile: container + "/file", encoding: .utf8), "before\nduring\n")
    }

    /// Whether the connection guard of daemon `pid` runs (`purgefs-guard VERB PID ...`).
    private static func hasGuard(_ pid: pid_t) -> Bool {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return names.contains { name in
            guard pid_t(name) != nil, let data = FileManager.default.contents(atPath: "/proc/\(name)/cmdline") else { return false }
            let argv = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            return argv.count > 2 && argv[0] == "purgefs-guard" && argv[2] == String(pid)
        }
    }

    /// Threads of `pid` that the kernel holds in a filesystem freeze (`wchan`).
    private static func threadsWaitingOnTheFreeze(of pid: pid_t) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.filter { task in
            let wchan = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/wchan", encoding: .utf8)) ?? ""
            return wchan.contains("percpu_rwsem") || wchan.contains("sb_start") || wchan.contains("frozen")
        }.count
    }

    /// Whether the main thread of `pid` is in futex(2) (`/proc/PID/syscall`: 202 on x86-64, 98 on arm64).
    private static func mainThreadWaitsOnAFutex(_ pid: pid_t) -> Bool {
        let call = (try? String(contentsOfFile: "/proc/\(pid)/syscall", encoding: .utf8)) ?? ""
        #if arch(arm64)
        return call.hasPrefix("98 ")
        #else
        return call.hasPrefix("202 ")
        #endif
    }

    /// A daemon that does not answer (stopped with SIGSTOP): `purgefs
    /// unmount` says so and suggests `--force`, which aborts the connection
    /// (the process waiting on it gets an error) and removes the mount.
    func testUnmountForceFreesProcessesWaitingOnAStoppedDaemon() throws {
        let daemons = fixture.ownProcesses()
        XCTAssertEqual(daemons.count, 1, "one daemon: \(daemons)")
        guard let daemon = daemons.first else { return }
        kill(daemon, SIGSTOP)
        defer { kill(daemon, SIGCONT) }
        let waiting = try Subprocess.spawn(["stat", m + "/anything"], stdoutPath: fixture.base + "/stat.out",
                                           stderrPath: fixture.base + "/stat.err")
        // The stat is waiting on the daemon, and keeps the mount busy.
        XCTAssertFalse(Subprocess.wait(waiting, timeout: 1), "a stopped daemon answered")
        let plain = try Subprocess.run([fixture.binary, "unmount", m], timeout: 30)
        XCTAssertEqual(plain.status, 1, "\(plain)")
        XCTAssertTrue(plain.stderr.contains("not answering") && plain.stderr.contains("--force"), plain.stderr)
        let forced = try Subprocess.run([fixture.binary, "unmount", "--force", m], timeout: 30)
        XCTAssertEqual(forced.status, 0, "\(forced)")
        XCTAssertTrue(Subprocess.wait(waiting, timeout: 10), "the stat still waits after the connection was aborted")
        XCTAssertNotEqual(waiting.terminationStatus, 0)
        XCTAssertFalse(MountTable.isMounted(m), "the mount is still there")
        kill(daemon, SIGCONT)
        XCTAssertTrue(eventually(timeout: 10) { access("/proc/\(daemon)", F_OK) != 0 }, "the daemon did not exit once aborted")
    }

    /// Runs `hangload.py` on the mount while `body` runs, then checks its
    /// verdict: every operation answered (a dead mount's error is an answer).
    private func withLoad(seconds: Int, label: String, _ body: (Process, () -> Int) throws -> Void) throws {
        let progressFile = fixture.base + "/progress"
        try? FileManager.default.removeItem(atPath: progressFile)
        let output = fixture.base + "/load.out"
        let load = try Subprocess.spawn(
            ["python3", MountFixture.packageRoot() + "/scripts/lib/hangload.py", m, String(seconds),
             "--deadline", "20", "--seed", String(Int.random(in: 1...1_000_000)), "--progress", progressFile],
            stdoutPath: output, stderrPath: fixture.base + "/load.err")
        defer { if load.isRunning { kill(load.processIdentifier, SIGKILL); Subprocess.wait(load, timeout: 10) } }
        let progress = {
            (try? String(contentsOfFile: progressFile, encoding: .utf8))?.split(separator: "\n").last.flatMap { Int($0) } ?? 0
        }
        try body(load, progress)
        XCTAssertFalse(load.isRunning, "\(label): the load is still running")
        if !load.isRunning {
            XCTAssertEqual(load.terminationStatus, 0, "\(label): \(loadOutput())")
        }
    }

    private func loadOutput() -> String {
        ["load.out", "load.err"].map { (try? String(contentsOfFile: fixture.base + "/" + $0, encoding: .utf8)) ?? "" }.joined()
    }

    private func daemonLog() -> String {
        daemonLogText().split(separator: "\n").suffix(10).joined(separator: "\n")
    }

    private static func processState(_ pid: pid_t) -> String {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return "pid \(pid): " + tasks.map { task in
            let stack = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stack", encoding: .utf8)) ?? "?"
            return "thread \(task): " + stack.split(separator: "\n").prefix(4).joined(separator: " <- ")
        }.joined(separator: "; ")
    }

    private static func environmentNumber(_ name: String) -> Int? {
        ProcessInfo.processInfo.environment[name].flatMap { Int($0) }
    }

    private func mkdirAll(_ path: String) -> Int32 {
        (try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)) == nil ? -1 : 0
    }
}
