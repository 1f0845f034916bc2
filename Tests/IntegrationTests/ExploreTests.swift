import Foundation
import Glibc
import PurgeCore
import PurgeSys
import XCTest

/// `purgefs explore` on small apps written here, each recorded on a real
/// mount and every crash state checked: the careful ones recover from every
/// state, the careless ones are caught, naming what they lost (real apps,
/// git, SQLite, LevelDB and LMDB, are ExploreAppsTests'). Plus, end to end:
/// `run --explore`, the same states from the same run, `--html` and
/// `--torn`; the bad input of the command line, and `--replay`.
final class ExploreTests: XCTestCase {
    private var fixture: ExploreFixture!
    private var directory: CommandScratch { fixture.directory }
    private var scratch: String { fixture.scratch }
    private var binary: String { fixture.binary }
    private var container: String { fixture.container }
    private var report: String { fixture.report }

    override func setUpWithError() throws {
        fixture = try ExploreFixture()
    }

    override func tearDownWithError() throws {
        fixture?.remove()
    }

    private func explore(_ arguments: [String], environment extra: [String: String] = [:]) throws -> CommandResult {
        try purgefs(["explore"] + arguments, environment: extra)
    }

    /// Runs `purgefs ARGUMENTS` (through `wrapper BINARY ARGUMENTS` when given); checks that nothing
    /// is left mounted and the work directory is gone.
    private func purgefs(_ arguments: [String], environment extra: [String: String] = [:], through wrapper: String? = nil) throws -> CommandResult {
        let result = try Subprocess.run((wrapper.map { [$0] } ?? []) + [binary] + arguments, timeout: 240,
                                        environment: directory.environment.merging(extra) { $1 })
        XCTAssertFalse(result.timedOut, "\(result)")
        XCTAssertEqual(MountTable.mounts(under: scratch).map(\.mountPoint), [], "nothing left mounted: \(result)")
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: scratch)) ?? []
        XCTAssertEqual(entries.filter { $0.hasPrefix("purgefs-explore.") }, [], "the work directory is removed: \(result)")
        return result
    }

    private func script(_ name: String, _ text: String) throws -> String { try fixture.script(name, text) }

    private func reportJSON() throws -> [String: Any] { try fixture.reportJSON() }

    private func failures(_ json: [String: Any]) -> [[String: Any]] { fixture.failures(json) }

    /// Holds when config.json holds one whole version.
    private let configCheck = #"grep -q '^{"version": [0-9]*}$' "$PURGEFS_CRASH_STATE/config.json" || { echo "config.json: $(wc -c < "$PURGEFS_CRASH_STATE/config.json") bytes, no version" >&2; exit 1; }"#

    private func writer(careful: Bool) throws -> String {
        try fixture.writer(fsync: careful)
    }

    // MARK: The four apps

    func testTheCarefulWriterRecoversFromEveryState() throws {
        let before = try Data(contentsOf: URL(fileURLWithPath: container + "/config.json"))
        let result = try explore(["--check", configCheck, "--report", report, "--json", container, "--", try writer(careful: true)])
        XCTAssertEqual(result.status, 0, "\(result)")
        let json = try reportJSON()
        XCTAssertEqual(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? NSDictionary, json as NSDictionary,
                       "--json prints what --report writes")
        XCTAssertEqual(json["failed"] as? Int, 0, "\(result)")
        XCTAssertEqual(json["operations"] as? Int, 10, "create, write, fsync, rename, fsync of the directory, twice: \(result)")
        XCTAssertGreaterThan(json["states"] as? Int ?? 0, 10, "both ends of the name range where they differ")
        XCTAssertEqual(json["sampled"] as? Bool, false)
        XCTAssertEqual((json["results"] as? [[String: Any]])?.count, json["states"] as? Int)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: container + "/config.json")), before, "the container is never changed")
    }

    /// A rename over a name is logged as one operation, whatever else goes
    /// on: here another process prints all the time, so output lands in the
    /// log between any two records it can. Before, it could land between
    /// the rename's removal and its move, and the states cut there had
    /// neither name (failures a real disk never shows).
    func testOutputDuringARenameOverANameIsNoFalseFailure() throws {
        let running = scratch + "/printing"
        let app = try script("careful-and-chatty", """
            cd "$PURGEFS_MOUNT" || exit 1
            : > "\(running)"
            ( while [ -e "\(running)" ]; do echo tick; done ) &
            for i in 1 2 3 4 5 6; do
              printf '{"version": %d}\\n' $i > tmp/config.json.new
              sync tmp/config.json.new
              mv tmp/config.json.new config.json
              sync .
              echo "saved $i"
            done
            rm -f "\(running)"
            wait
            """)
        let result = try explore(["--check", configCheck, "--report", report, container, "--", app])
        XCTAssertEqual(result.status, 0, "\(result)")
        let json = try reportJSON()
        XCTAssertEqual(json["failed"] as? Int, 0, "\(result)")
        XCTAssertEqual(json["operations"] as? Int, 30, "five a round, the rename over config.json one of them: \(result)")
    }

    /// The README's example: the careless writer fails on every model but
    /// ext4, whose auto_da_alloc writes the data before the rename commits.
    func testTheCarelessWriterFailsOnEveryModelButExt4() throws {
        let app = try writer(careful: false)
        let result = try explore(["--check", configCheck, "--models", "all", "--report", report, container, "--", app])
        XCTAssertEqual(result.status, 1, "\(result)")
        XCTAssertTrue(result.stdout.contains("  models: fails on ext4-noauto_da_alloc, xfs, btrfs and posix, survives on ext4\n"), result.stdout)
        let json = try reportJSON()
        XCTAssertEqual(json["models"] as? [String], ["ext4", "ext4-noauto_da_alloc", "xfs", "btrfs", "posix"])
        let found = failures(json)
        XCTAssertFalse(found.isEmpty)
        for failure in found {
            XCTAssertFalse((failure["models"] as? [String] ?? ["ext4"]).contains("ext4"), "\(failure)")
        }
        let renames = found.filter { $0["operation"] as? String == "rename tmp/config.json.new -> config.json" }
        XCTAssertFalse(renames.isEmpty, "\(found)")
        for failure in renames {
            XCTAssertEqual(failure["models"] as? [String], ["ext4-noauto_da_alloc", "xfs", "btrfs", "posix"], "\(failure)")
        }
        let points = (json["results"] as? [[String: Any]] ?? []).map { "\($0["point"] ?? "")/\($0["variant"] ?? "")" }
        XCTAssertGreaterThan(points.count, Set(points).count, "a state two models leave differently is checked under each")
        let ext4 = try explore(["--check", configCheck, container, "--", app])
        XCTAssertEqual(ext4.status, 0, "ext4 is the default: \(ext4)")
        XCTAssertTrue(ext4.stdout.contains("  model: ext4 (survives on ext4)\n"), ext4.stdout)
    }

    func testTheCarelessWriterIsFoundNamingTheRename() throws {
        let keep = scratch + "/kept"
        let result = try explore(["--check", configCheck, "--model", "xfs", "--report", report, "--keep", keep, container, "--", try writer(careful: false)])
        XCTAssertEqual(result.status, 1, "\(result)")
        let json = try reportJSON()
        let found = failures(json)
        XCTAssertFalse(found.isEmpty, "\(result)")
        let renames = found.filter { $0["operation"] as? String == "rename tmp/config.json.new -> config.json" }
        XCTAssertEqual(renames.count, 2, "the state right after each rename (the second new file may reuse the first one's inode number): \(found)")
        for failure in renames {
            XCTAssertEqual(failure["variant"] as? String, "names-kept", "the new name exists, its data does not")
            XCTAssertTrue(failure["lastDurable"] is NSNull, "nothing was ever synced")
            XCTAssertTrue((failure["lost"] as? [String] ?? []).contains("config.json: bytes 0-14"), "\(failure)")
            XCTAssertEqual(failure["stderr"] as? String, "config.json: 0 bytes, no version")
        }
        XCTAssertEqual(Set(renames.compactMap { $0["group"] as? Int }), [1], "the same operation after the same (no) durable one, the same message")
        XCTAssertEqual((json["groups"] as? [[String: Any]])?.first?["smallest"] as? String, renames.first?["state"] as? String)
        XCTAssertTrue(result.stdout.contains("operation:    rename tmp/config.json.new -> config.json"), result.stdout)
        // The kept state and the replayed one are the state as built: config.json empty.
        let point = try XCTUnwrap(renames.first?["point"] as? Int)
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: keep + "/\(point)-names-kept/config.json")[.size] as? Int, 0)
        let replayed = scratch + "/replayed"
        let replay = try explore(["--replay", report, "\(point)/names-kept", replayed])
        XCTAssertEqual(replay.status, 0, "\(replay)")
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: replayed + "/config.json")[.size] as? Int, 0)
        XCTAssertTrue(FileManager.default.fileExists(atPath: replayed + "/tmp"))
        // A recording whose data file holds less than its log names is refused (a log
        // made by hand could otherwise replay writes of any length).
        let data = try XCTUnwrap(json["recording"] as? String) + "/data"
        let bytes = try Data(contentsOf: URL(fileURLWithPath: data))
        try Data().write(to: URL(fileURLWithPath: data))
        let cut = try explore(["--replay", report, "\(point)/names-kept", scratch + "/cut"])
        XCTAssertEqual(cut.status, 1, "\(cut)")
        XCTAssertEqual(cut.stderrLines.count, 1, "\(cut)")
        XCTAssertTrue(cut.stderr.contains("is not whole"), "\(cut)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: scratch + "/cut"))
        try bytes.write(to: URL(fileURLWithPath: data))
        // A report given to --replay for a container that is not the one explored any more:
        // one of its files changed in place to the same size, then a file more.
        let original = try Data(contentsOf: URL(fileURLWithPath: container + "/config.json"))
        try Data("{\"version\": 9}\n".utf8).write(to: URL(fileURLWithPath: container + "/config.json"))
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: container + "/config.json")).count, original.count)
        for change in ["config.json changed in place", "a file more"] {
            if change == "a file more" {
                try original.write(to: URL(fileURLWithPath: container + "/config.json"))
                try Data("other\n".utf8).write(to: URL(fileURLWithPath: container + "/other"))
            }
            let other = try explore(["--replay", report, "\(point)", scratch + "/other"])
            XCTAssertEqual(other.status, 1, "\(change): \(other)")
            XCTAssertEqual(other.stderrLines.count, 1, "\(change): \(other)")
            XCTAssertTrue(other.stderr.contains("another container"), "\(change): \(other)")
            XCTAssertFalse(FileManager.default.fileExists(atPath: scratch + "/other"))
        }
    }

    func testAnAppendOnlyLogThatSyncsEachLineRecoversFromEveryState() throws {
        let app = try script("logger", """
            cd "$PURGEFS_MOUNT" || exit 1
            : > log && sync log && sync . || exit 1
            for i in 1 2 3 4; do
              echo "line $i" >> log && sync -d log || exit 1
              echo "line $i"
            done
            """)
        let check = #"n=$(wc -l < "$PURGEFS_CRASH_OUTPUT"); head -n "$n" "$PURGEFS_CRASH_STATE/log" 2>/dev/null | cmp -s - "$PURGEFS_CRASH_OUTPUT" || { echo "the log lacks printed lines" >&2; exit 1; }"#
        let result = try explore(["--check", check, "--report", report, container, "--", app])
        XCTAssertEqual(result.status, 0, "\(result)")
        XCTAssertEqual(try reportJSON()["failed"] as? Int, 0)
        // Without the fdatasync the same checker finds the lost lines: it can fail.
        let careless = try script("careless-logger", """
            cd "$PURGEFS_MOUNT" || exit 1
            for i in 1 2; do echo "line $i" >> log; echo "line $i"; done
            """)
        XCTAssertEqual(try explore(["--check", check, container, "--", careless]).status, 1)
    }

    // MARK: End to end

    func testRunWithExploreIsExploreAndFindsTheCarelessWriter() throws {
        let result = try purgefs(["run", "--explore", "--check", configCheck, "--model", "xfs", "--report", report, container, "--", try writer(careful: false)])
        XCTAssertEqual(result.status, 1, "\(result)")
        XCTAssertEqual(result.stderr, "", "\(result)")
        let found = failures(try reportJSON())
        XCTAssertFalse(found.isEmpty, "\(result)")
        XCTAssertTrue(found.contains { $0["operation"] as? String == "rename tmp/config.json.new -> config.json" }, "\(found)")
        XCTAssertTrue(result.stdout.contains("operation:    rename tmp/config.json.new -> config.json"), result.stdout)
    }

    func testTheSameRunExploredTwiceGivesTheSameStatesInTheSameOrder() throws {
        let app = try writer(careful: true)
        let second = scratch + "/second.json"
        XCTAssertEqual(try explore(["--check", configCheck, "--report", report, container, "--", app]).status, 0)
        XCTAssertEqual(try explore(["--check", configCheck, "--report", second, container, "--", app]).status, 0)
        let one = try reportJSON()
        let two = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: second))) as? [String: Any])
        let results = try XCTUnwrap(one["results"] as? [[String: Any]])
        XCTAssertGreaterThan(results.count, 10)
        XCTAssertEqual(one["results"] as? NSArray, two["results"] as? NSArray, "the same states, in the same order, with the same outcomes")
        for key in ["states", "passed", "failed", "operations", "statesInAll"] {
            XCTAssertEqual(one[key] as? Int, two[key] as? Int, key)
        }
    }

    func testThePageIsWrittenSelfContainedWithEveryState() throws {
        let page = scratch + "/explore.html"
        let result = try explore(["--check", configCheck, "--model", "xfs", "--report", report, "--html", page, container, "--", try writer(careful: false)])
        XCTAssertEqual(result.status, 1, "\(result)")
        let html = try String(contentsOfFile: page, encoding: .utf8)
        let states = try XCTUnwrap(try reportJSON()["states"] as? Int)
        XCTAssertTrue(html.contains("data-states=\"\(states)\""), "the strip has the report's \(states) states")
        XCTAssertEqual(html.components(separatedBy: "<rect class=\"state ").count - 1, states, "a cell per state")
        XCTAssertTrue(html.contains("<td id=\"count-states\">\(states)</td>"))
        XCTAssertTrue(html.contains("rename tmp/config.json.new -&gt; config.json"), "the failures' details")
        for outside in ["src=", "<link", "@import", "url(http", "url(//", "https:"] {
            XCTAssertFalse(html.contains(outside), "nothing from outside the page: \(outside)")
        }
        let links = html.components(separatedBy: "http://").dropFirst()
        XCTAssertTrue(links.allSatisfy { $0.hasPrefix("www.w3.org/") }, "no address but a namespace's")
    }

    func testTornStatesOfTheSyncedLogOnARealMountAllRecover() throws {
        let app = try script("logger", """
            cd "$PURGEFS_MOUNT" || exit 1
            : > log && sync log && sync . || exit 1
            for i in 1 2 3; do
              printf 'line %d %05000d\\n' $i 0 >> log && sync -d log || exit 1
              echo "line $i"
            done
            """)
        // The first six characters of each whole line, against what was printed.
        let check = #"n=$(wc -l < "$PURGEFS_CRASH_OUTPUT"); head -n "$n" "$PURGEFS_CRASH_STATE/log" | cut -c1-6 | cmp -s - "$PURGEFS_CRASH_OUTPUT" || { echo "the log lacks printed lines" >&2; exit 1; }"#
        let result = try explore(["--check", check, "--torn", "--report", report, container, "--", app])
        XCTAssertEqual(result.status, 0, "\(result)")
        let json = try reportJSON()
        XCTAssertEqual(json["failed"] as? Int, 0, "\(result)")
        XCTAssertEqual(json["torn"] as? Bool, true)
        let variants = (json["results"] as? [[String: Any]] ?? []).compactMap { $0["variant"] as? String }
        XCTAssertTrue(variants.contains("torn-1"), "\(variants)")
        XCTAssertTrue(variants.contains("torn-2"), "each line is two pages, so a line may survive in part: \(variants)")
    }

    // MARK: Bounded, stoppable, and exact about the run

    /// Each state used to leave a directory descriptor open per directory
    /// it swept: under a limit of 256 descriptors, an app that makes 60
    /// directories died a few states in. Now every state is checked.
    func testAnAppOfSixtyDirectoriesIsExploredWhole256DescriptorsAllowed() throws {
        let app = try script("directories", """
            cd "$PURGEFS_MOUNT" || exit 1
            i=0
            while [ $i -lt 60 ]; do mkdir "d$i" && echo $i > "d$i/f" || exit 1; i=$((i + 1)); done
            """)
        let limited = try script("limited", "ulimit -n 256 || exit 99\nexec \"$@\"\n")
        let result = try purgefs(["explore", "--check", "true", "--report", report, container, "--", app], through: limited)
        XCTAssertEqual(result.status, 0, "\(result)")
        let json = try reportJSON()
        XCTAssertGreaterThanOrEqual(json["operations"] as? Int ?? 0, 180, "mkdir, create, write each: \(result)")
        XCTAssertEqual(json["states"] as? Int, json["statesInAll"] as? Int, "every state checked: \(result)")
        XCTAssertEqual(json["failed"] as? Int, 0)
    }

    /// A checker that hangs has its process group killed at --check-timeout
    /// (what it started too) and its state fails as timed out; the rest go on.
    func testACheckerThatRunsOutOfTimeFailsItsStateAsTimedOut() throws {
        let pids = scratch + "/pids"
        let check = #"[ "$PURGEFS_CRASH_POINT" = 2 ] || exit 0; sleep 600 & echo $! >> '"# + pids + #"'; wait"#
        let result = try explore(["--check", check, "--check-timeout", "1s", "--report", report, container, "--", try writer(careful: true)])
        XCTAssertEqual(result.status, 1, "\(result)")
        let json = try reportJSON()
        XCTAssertEqual(json["states"] as? Int, json["statesInAll"] as? Int, "\(result)")
        let found = failures(json)
        XCTAssertFalse(found.isEmpty)
        XCTAssertEqual(Set(found.compactMap { $0["point"] as? Int }), [2], "only the states at point 2: \(found)")
        for failure in found { XCTAssertEqual(failure["stderr"] as? String, "timed out after 1s") }
        let started = try String(contentsOfFile: pids, encoding: .utf8).split(separator: "\n").compactMap { Int32($0) }
        XCTAssertEqual(started.count, found.count)
        for pid in started { XCTAssertTrue(Self.isGone(pid), "the checker's sleep \(pid) was killed with its group") }
    }

    /// Gone, or a zombie about to be reaped by init.
    private static func isGone(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
        return stat.split(separator: ")").last?.split(separator: " ").first == "Z"
    }

    /// A command that hangs is stopped at --timeout, and what it did before
    /// is explored; that it ran out of time is a finding (exit 1).
    func testACommandThatRunsOutOfTimeIsStoppedAndWhatItDidExplored() throws {
        let app = try script("hangs", """
            cd "$PURGEFS_MOUNT" || exit 1
            echo '{"version": 1}' > config.json
            echo saved
            exec sleep 600
            """)
        let result = try explore(["--check", "true", "--timeout", "2s", "--report", report, container, "--", app])
        XCTAssertEqual(result.status, 1, "\(result)")
        let json = try reportJSON()
        XCTAssertEqual(json["commandTimedOut"] as? Bool, true, "\(result)")
        XCTAssertEqual(json["commandStatus"] as? Int, 128 + Int(SIGTERM), "\(result)")
        XCTAssertGreaterThan(json["operations"] as? Int ?? 0, 0, "\(result)")
        XCTAssertEqual(json["states"] as? Int, json["statesInAll"] as? Int)
        XCTAssertEqual(json["failed"] as? Int, 0)
        XCTAssertTrue(result.stdout.contains("ran out of time (--timeout 2s)"), result.stdout)
    }

    /// SIGTERM in the middle: the checkers are killed, the report of the
    /// states checked so far is printed and written, marked interrupted,
    /// the work directory goes, and the status is 128 + 15.
    func testSIGTERMMidExplorationWritesTheReportSoFarMarkedInterrupted() throws {
        let marker = scratch + "/checking-point-4"
        let check = #"[ "$PURGEFS_CRASH_POINT" -lt 4 ] && exit 0; : > '"# + marker + #"'; exec sleep 600"#
        let page = scratch + "/explore.html"
        let out = scratch + "/explore.out", err = scratch + "/explore.err"
        let process = try Subprocess.spawn([binary, "explore", "--check", check, "--report", report, "--html", page, container, "--",
                                            try writer(careful: true)],
                                           stdoutPath: out, stderrPath: err, environment: directory.environment)
        let deadline = Date().addingTimeInterval(120)
        while !FileManager.default.fileExists(atPath: marker), process.isRunning, Date() < deadline { usleep(10_000) }
        XCTAssertTrue(FileManager.default.fileExists(atPath: marker), "a checker reached point 4")
        kill(process.processIdentifier, SIGTERM)
        XCTAssertTrue(Subprocess.wait(process, timeout: 60), "explore ends on SIGTERM")
        if process.isRunning { kill(process.processIdentifier, SIGKILL); Subprocess.wait(process, timeout: 10) }
        let stdout = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
        XCTAssertEqual(process.terminationStatus, 128 + SIGTERM, stdout)
        let json = try reportJSON()
        XCTAssertEqual(json["interrupted"] as? Bool, true)
        XCTAssertEqual(json["interruptedBy"] as? String, "SIGTERM")
        let states = try XCTUnwrap(json["states"] as? Int)
        XCTAssertGreaterThanOrEqual(states, 3, "points 1 to 3 were checked")
        XCTAssertLessThan(states, try XCTUnwrap(json["statesChosen"] as? Int))
        XCTAssertEqual((json["results"] as? [[String: Any]])?.count, states)
        XCTAssertTrue(stdout.contains("interrupted by SIGTERM after \(states) of "), stdout)
        XCTAssertTrue(FileManager.default.fileExists(atPath: page), "the page is written too")
        XCTAssertEqual(MountTable.mounts(under: scratch).map(\.mountPoint), [])
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: scratch)) ?? []
        XCTAssertEqual(entries.filter { $0.hasPrefix("purgefs-explore.") }, [], "the work directory is removed")
    }

    /// A command that exits non-zero is a finding: status 1 though every
    /// state passed, its status and the end of its stderr in the report.
    func testACommandThatFailsIsAFindingWithItsStatusAndStderr() throws {
        let app = try script("fails", """
            cd "$PURGEFS_MOUNT" || exit 1
            echo '{"version": 1}' > config.json
            echo "first line" >&2
            echo "cannot write the index: disk full" >&2
            exit 3
            """)
        let result = try explore(["--check", "true", "--report", report, container, "--", app])
        XCTAssertEqual(result.status, 1, "\(result)")
        let json = try reportJSON()
        XCTAssertEqual(json["failed"] as? Int, 0)
        XCTAssertEqual(json["commandStatus"] as? Int, 3)
        XCTAssertEqual(json["commandStderr"] as? String, "first line\ncannot write the index: disk full")
        XCTAssertTrue(result.stdout.contains("the command exited with status 3 (a finding"), result.stdout)
        XCTAssertTrue(result.stdout.contains("    cannot write the index: disk full"), result.stdout)
        XCTAssertEqual(result.stderr, "", "the command's stderr goes into the report")
    }

    // MARK: The command line

    func testSamplingKeepsAtMostTheStatesAskedForAndSaysSo() throws {
        let result = try explore(["--check", configCheck, "--max-states", "3", "--report", report, container, "--", try writer(careful: true)])
        XCTAssertEqual(result.status, 0, "\(result)")
        let json = try reportJSON()
        XCTAssertEqual(json["states"] as? Int, 3)
        XCTAssertEqual(json["sampled"] as? Bool, true)
        XCTAssertTrue(result.stdout.contains("sampled evenly: 3 of"), result.stdout)
    }

    func testBadInputIsOneLineAndLeavesNothing() throws {
        let app = try writer(careful: true)
        let cases: [([String], Int32, String)] = [
            ([container, "--", app], 64, "--check CMD is required"),
            (["--check", "no-such-checker-anywhere", container, "--", app], 64, "no-such-checker-anywhere: command not found"),
            (["--check", "true", "--max-states", "0", container, "--", app], 64, "--max-states"),
            (["--check", "true", container, "--", "false"], 1, "changed nothing before it ended"),
            (["--check", "true", container, "--", "/no/such/app"], 1, "explore: cannot start /no/such/app: No such file or directory"),
            (["--check", "true", container, "--", "no-such-app-anywhere"], 1, "explore: cannot start no-such-app-anywhere: No such file or directory"),
        ]
        // --keep writes a directory per failed state there: a DIR that holds anything is refused before the app runs.
        let kept = scratch + "/kept"
        try FileManager.default.createDirectory(atPath: kept + "/1-names-kept", withIntermediateDirectories: true)
        try Data("mine\n".utf8).write(to: URL(fileURLWithPath: kept + "/1-names-kept/notes.txt"))
        let ran = scratch + "/ran"
        let marker = try script("marker", "touch '\(ran)'\n")
        let file = scratch + "/plain"
        try Data("plain\n".utf8).write(to: URL(fileURLWithPath: file))
        let refusals: [([String], Int32, String)] = [
            (["--check", "true", "--keep", kept, container, "--", marker], 64, "explore: --keep \(kept) is not empty"),
            (["--check", "true", "--keep", file, container, "--", marker], 64, "explore: --keep \(file): not a directory"),
        ]
        for (arguments, status, text) in cases + refusals {
            let result = try explore(arguments)
            XCTAssertEqual(result.status, status, "\(result)")
            XCTAssertEqual(result.stderrLines.count, 1, "\(result)")
            XCTAssertTrue(result.stderr.contains(text), "\(result)")
        }
        XCTAssertEqual(try String(contentsOfFile: container + "/config.json", encoding: .utf8), "{\"version\": 0}\n", "untouched")
        XCTAssertEqual(try String(contentsOfFile: kept + "/1-names-kept/notes.txt", encoding: .utf8), "mine\n", "the user's file stays")
        XCTAssertFalse(FileManager.default.fileExists(atPath: ran), "refused before the app ran")
    }
}
