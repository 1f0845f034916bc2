import Foundation
import Glibc
import PurgeCore
import PurgeSys
import XCTest

/// `purgefs run` as a user runs it: a container in a fresh directory of the
/// test's (also its TMPDIR, so a scratch copy or a mount left behind shows
/// up there), the command's status passed on, nothing left mounted however
/// the command ended, and the summary's JSON as the report file has it.
final class RunCommandTests: XCTestCase {
    private var directory: CommandScratch!
    private var scratch: String { directory.path }
    private var environment: [String: String] { directory.environment }
    private var binary = ""
    private var container: String { scratch + "/app" }
    private var report: String { scratch + "/report.json" }

    override func setUpWithError() throws {
        binary = try MountFixture.locateBinary()
        directory = try CommandScratch(prefix: "purgefs-run-test")
        chmod(scratch, 0o755)
        try FileManager.default.createDirectory(atPath: container + "/Library/Caches", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: container + "/tmp", withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        directory?.remove()
    }

    private func run(_ arguments: [String], timeout: TimeInterval = 60) throws -> CommandResult {
        let result = try Subprocess.run([binary, "run"] + arguments, timeout: timeout, environment: environment)
        XCTAssertFalse(result.timedOut, "\(result)")
        return result
    }

    private func assertNothingLeft(_ result: CommandResult, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(MountTable.mounts(under: scratch).map(\.mountPoint), [], "no mount left: \(result)", file: file, line: line)
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: scratch)) ?? ["(unreadable)"]
        XCTAssertEqual(entries.filter { $0.hasPrefix("purgefs-run.") }, [], "run's scratch directory removed: \(result)",
                       file: file, line: line)
    }

    private func reportJSON(file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: report))
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any], file: file, line: line)
    }

    private func write(_ path: String, bytes: Int, modified: Date? = nil) throws {
        let full = container + "/" + path
        try Data(repeating: 0x5A, count: bytes).write(to: URL(fileURLWithPath: full))
        if let modified { try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: full) }
    }

    // MARK: How the command ends

    func testACommandThatExitsZeroRunsOnTheMount() throws {
        // The command sees the mount at PURGEFS_MOUNT (its table lists it), writes through it, and reads an attribute.
        let script = """
            set -e
            test "$PURGEFS_MOUNT" = "\(container)"
            grep -q " $PURGEFS_MOUNT fuse.purgefs " /proc/self/mounts
            head -c 100000 /dev/zero > "$PURGEFS_MOUNT/Documents.bin"
            getfattr --only-values -n user.purgefs.capacity "$PURGEFS_MOUNT" > "\(scratch)/capacity"
            """
        let result = try run(["-o", "capacity=64M", "--report", report, container, "--", "sh", "-c", script])
        XCTAssertEqual(result.status, 0, "\(result)")
        assertNothingLeft(result)
        XCTAssertEqual(try String(contentsOfFile: scratch + "/capacity", encoding: .utf8), String(64 << 20))
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: container + "/Documents.bin")[.size] as? Int, 100_000,
                       "written through the mount, in place")
        XCTAssertTrue(result.stderr.contains("purgefs run: sh -c"), "\(result)")
        XCTAssertTrue(result.stderr.contains("exited with status 0"), "\(result)")
        let json = try reportJSON()
        XCTAssertEqual(json["exit_status"] as? Int, 0)
        XCTAssertEqual(json["exit_code"] as? Int, 0)
        XCTAssertTrue(json["signal"] is NSNull)
        XCTAssertEqual(json["mountpoint"] as? String, container)
        XCTAssertEqual(json["peak_used"] as? Int, 102_400, "100,000 bytes in 4 KiB blocks")
        XCTAssertEqual(json["enospc"] as? Int, 0)
        XCTAssertEqual(json["faults_injected"] as? Int, 0, "no rule, no fault")
    }

    func testWritesAnsweredENOSPCAreCounted() throws {
        // 1 MiB left and nothing purgeable: the 2 MiB write fails, and the mount counted it.
        let scenario = scratch + "/full.txt"
        try "at 0s squeeze 1M\n".write(toFile: scenario, atomically: true, encoding: .utf8)
        let script = "while [ ! -e '\(scratch)/go' ]; do sleep 0.01; done; head -c 2097152 /dev/zero > \"$PURGEFS_MOUNT/Documents.bin\""
        let process = try Subprocess.spawn([binary, "run", "-o", "capacity=16M,low=0,high=0", "--scenario", scenario,
                                            "--report", report, container, "--", "sh", "-c", script],
                                           stdoutPath: scratch + "/out", stderrPath: scratch + "/err", environment: environment)
        // The squeeze runs in run's first round: wait for it through the mount before the command writes.
        let deadline = Date().addingTimeInterval(30)
        while process.isRunning, Date() < deadline,
              (try? Paths.extendedAttribute("user.purgefs.external", of: container)).map({ String(decoding: $0, as: UTF8.self) }) != String(15 << 20) {
            usleep(10_000)
        }
        FileManager.default.createFile(atPath: scratch + "/go", contents: nil)
        XCTAssertTrue(Subprocess.wait(process, timeout: 60))
        let stderr = (try? String(contentsOfFile: scratch + "/err", encoding: .utf8)) ?? ""
        XCTAssertEqual(process.terminationStatus, 1, "head failed: \(stderr)")
        XCTAssertTrue(stderr.contains("No space left on device"), stderr)
        let json = try reportJSON()
        let enospc = try XCTUnwrap(json["enospc"] as? Int)
        XCTAssertGreaterThanOrEqual(enospc, 1, stderr)
        XCTAssertTrue(stderr.contains("answered ENOSPC   \(enospc) request"), stderr)
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: container + "/Documents.bin")[.size] as? Int, 1 << 20,
                       "what fitted, and no more")
    }

    func testTheCommandsExitStatusIsPassedOn() throws {
        let result = try run(["--json", container, "--", "sh", "-c", "echo out; exit 3"])
        XCTAssertEqual(result.status, 3, "\(result)")
        XCTAssertEqual(result.stdout, "out\n", "stdout is the command's alone")
        assertNothingLeft(result)
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.stderr.utf8)) as? [String: Any], "\(result)")
        XCTAssertEqual(json["exit_status"] as? Int, 3)
        XCTAssertEqual(json["command"] as? [String], ["sh", "-c", "echo out; exit 3"])
    }

    func testACommandKilledBySIGKILLEndsTheRunWith137() throws {
        let result = try run(["--report", report, container, "--", "sh", "-c", "kill -9 $$"])
        XCTAssertEqual(result.status, 137, "\(result)")
        assertNothingLeft(result)
        let json = try reportJSON()
        XCTAssertEqual(json["signal"] as? String, "SIGKILL")
        XCTAssertTrue(json["exit_code"] is NSNull)
    }

    func testSIGINTIsPassedOnAndTheMountTakenDown() throws {
        try assertInterrupted(by: SIGINT, status: 130)
    }

    func testSIGTERMIsPassedOnAndTheMountTakenDown() throws {
        try assertInterrupted(by: SIGTERM, status: 143)
    }

    /// run is sent `signal` while its command (a shell and its sleep) runs:
    /// the whole group gets it, run exits as the command did, nothing is mounted.
    private func assertInterrupted(by signal: Int32, status: Int32, file: StaticString = #filePath, line: UInt = #line) throws {
        let started = scratch + "/started"
        let script = "sleep 300 & echo $! > '\(started).tmp'; mv '\(started).tmp' '\(started)'; wait"
        let process = try Subprocess.spawn([binary, "run", "--report", report, container, "--", "sh", "-c", script],
                                           stdoutPath: scratch + "/out", stderrPath: scratch + "/err", environment: environment)
        let deadline = Date().addingTimeInterval(30)
        while !FileManager.default.fileExists(atPath: started), process.isRunning, Date() < deadline { usleep(10_000) }
        XCTAssertTrue(FileManager.default.fileExists(atPath: started), "the command started", file: file, line: line)
        XCTAssertEqual(MountTable.mounts(under: scratch).map(\.mountPoint), [container], "mounted while it runs", file: file, line: line)
        kill(process.processIdentifier, signal)
        XCTAssertTrue(Subprocess.wait(process, timeout: 30), "run ended", file: file, line: line)
        let stderr = (try? String(contentsOfFile: scratch + "/err", encoding: .utf8)) ?? ""
        XCTAssertEqual(process.terminationReason, .exit, stderr, file: file, line: line)
        XCTAssertEqual(process.terminationStatus, status, stderr, file: file, line: line)
        let result = CommandResult(arguments: ["run"], status: process.terminationStatus, stdout: "", stderr: stderr, timedOut: false)
        assertNothingLeft(result, file: file, line: line)
        let sleeper = try XCTUnwrap(Int32(try String(contentsOfFile: started, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        XCTAssertFalse(ProcessID(rawValue: sleeper).isRunning, "the command's whole group got the signal", file: file, line: line)
        let json = try reportJSON(file: file, line: line)
        XCTAssertEqual(json["interrupted_by"] as? String, TerminationRequests.name(of: signal), file: file, line: line)
    }

    func testCtrlCOnATerminalReachesTheCommandAndTheMountGoes() throws {
        // script(1) gives run a terminal: run hands it to the command (which can read it), so Ctrl-C goes to the command.
        guard let script = Subprocess.which("script") else { throw XCTSkip("script (util-linux) is not installed") }
        let started = scratch + "/started"
        let inner = "read line; echo \"read $line\"; touch '\(started)'; sleep 300"
        let command = [binary, "run", "--report", report, container, "--", "sh", "-c", inner]
            .map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: script)
        process.arguments = ["-qec", command, "/dev/null"]
        process.environment = environment
        let input = Pipe()
        process.standardInput = input
        FileManager.default.createFile(atPath: scratch + "/out", contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: scratch + "/out"))
        process.standardError = process.standardOutput
        try process.run()
        try input.fileHandleForWriting.write(contentsOf: Data("typed\n".utf8))
        let deadline = Date().addingTimeInterval(30)
        while !FileManager.default.fileExists(atPath: started), process.isRunning, Date() < deadline { usleep(10_000) }
        XCTAssertTrue(FileManager.default.fileExists(atPath: started), "the command read the terminal and went on")
        try input.fileHandleForWriting.write(contentsOf: Data([0x03]))  // Ctrl-C
        let outputPath = scratch + "/out"
        // Reading the status of a process still running traps and ends the whole suite.
        guard Subprocess.wait(process, timeout: 30) else {
            process.interrupt()
            Subprocess.wait(process, timeout: 10)
            let sofar = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            return XCTFail("run did not end within 30 s of Ctrl-C: \(sofar)")
        }
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        XCTAssertEqual(process.terminationStatus, 130, output)
        XCTAssertTrue(output.contains("read typed"), output)
        let result = CommandResult(arguments: ["script"], status: process.terminationStatus, stdout: output, stderr: "", timedOut: false)
        assertNothingLeft(result)
        let json = try reportJSON()
        XCTAssertEqual(json["signal"] as? String, "SIGINT")
        XCTAssertTrue(json["interrupted_by"] is NSNull, "the terminal's SIGINT went to the command's group, not to run")
    }

    func testScratchLeavesTheContainerUntouched() throws {
        try write("Library/Caches/keep.bin", bytes: 4096)
        let script = "rm \"$PURGEFS_MOUNT/Library/Caches/keep.bin\" && echo new > \"$PURGEFS_MOUNT/new.txt\" && echo \"$PURGEFS_MOUNT\" > '\(scratch)/where'"
        let result = try run(["--scratch", container, "--", "sh", "-c", script])
        XCTAssertEqual(result.status, 0, "\(result)")
        assertNothingLeft(result)
        let mountedAt = try String(contentsOfFile: scratch + "/where", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertTrue(mountedAt.hasPrefix(scratch + "/purgefs-run."), mountedAt)
        XCTAssertFalse(FileManager.default.fileExists(atPath: mountedAt), "the copy is removed")
        XCTAssertTrue(FileManager.default.fileExists(atPath: container + "/Library/Caches/keep.bin"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: container + "/new.txt"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: container + "/.purgefs"), "the original was never mounted")
    }

    // MARK: Scenarios

    func testAScenarioSqueezesAndPurges() throws {
        try write("Library/Caches/old.bin", bytes: 1 << 20, modified: Date(timeIntervalSinceNow: -7200))
        try write("Library/Caches/new.bin", bytes: 1 << 20, modified: Date(timeIntervalSinceNow: -60))
        let scenario = scratch + "/s.txt"
        try """
            at 0s squeeze 10M                                     # 10 MiB available, above the low mark: no purge
            when file tmp/ready exists timeout 30s purge 1M       # the least recently used goes
            when used > 99% crash                                 # never reached: the command ends first
            """.write(toFile: scenario, atomically: true, encoding: .utf8)
        // The command waits for the purge, then notes what is available.
        let script = """
            touch "$PURGEFS_MOUNT/tmp/ready"
            i=0; while [ -e "$PURGEFS_MOUNT/Library/Caches/old.bin" ] && [ $i -lt 3000 ]; do sleep 0.01; i=$((i+1)); done
            getfattr --only-values -n user.purgefs.available "$PURGEFS_MOUNT" > '\(scratch)/available'
            """
        let result = try run(["-o", "capacity=64M,low=1M,high=2M", "--scenario", scenario, "--report", report,
                              container, "--", "sh", "-c", script])
        XCTAssertEqual(result.status, 0, "\(result)")
        assertNothingLeft(result)
        XCTAssertFalse(FileManager.default.fileExists(atPath: container + "/Library/Caches/old.bin"))
        XCTAssertTrue(FileManager.default.fileExists(atPath: container + "/Library/Caches/new.bin"))
        XCTAssertEqual(try String(contentsOfFile: scratch + "/available", encoding: .utf8), String(11 << 20),
                       "squeezed to 10 MiB, then 1 MiB purged")
        let json = try reportJSON()
        let steps = try XCTUnwrap(json["steps"] as? [[String: Any]])
        XCTAssertEqual(steps.map { $0["state"] as? String }, ["done", "done", "not_reached"])
        XCTAssertEqual(steps.map { $0["line"] as? Int }, [1, 2, 3])
        XCTAssertEqual(steps.first?["step"] as? String, "at 0s squeeze 10 MiB")
        XCTAssertEqual(json["purged_files"] as? Int, 1)
        XCTAssertEqual(json["purged_bytes"] as? Int, 1 << 20)
        let manual = try XCTUnwrap((json["purged_by_reason"] as? [String: Any])?["manual"] as? [String: Any])
        XCTAssertEqual(manual["files"] as? Int, 1)
        XCTAssertTrue(result.stderr.contains("purged            1 MiB in 1 file (manual 1 MiB in 1 file)"), "\(result)")
        XCTAssertTrue(result.stderr.contains("line 2  when file tmp/ready exists timeout 30s purge 1 MiB"), "\(result)")
    }

    func testAFaultStepIsInjectedAndCounted() throws {
        // The rule fires once: the command's fsyncs go on until one fails, then it stops.
        let scenario = scratch + "/fault.txt"
        try "at 0s fault --op fsync --path 'Documents/*' --errno EIO --times 1\n".write(toFile: scenario, atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: container + "/Documents", withIntermediateDirectories: true)
        let script = """
            i=0
            while dd if=/dev/zero of="$PURGEFS_MOUNT/Documents/db" bs=4096 count=1 conv=fsync 2>/dev/null; do
                i=$((i+1)); [ $i -lt 3000 ] || exit 9; sleep 0.01
            done
            exit 0
            """
        let result = try run(["--scenario", scenario, "--report", report, container, "--", "sh", "-c", script])
        XCTAssertEqual(result.status, 0, "an fsync failed: \(result)")
        assertNothingLeft(result)
        let json = try reportJSON()
        XCTAssertEqual(json["faults_injected"] as? Int, 1)
        XCTAssertTrue(result.stderr.contains("faults injected   1\n"), "\(result)")
        XCTAssertEqual((json["steps"] as? [[String: Any]])?.first?["state"] as? String, "done")
    }

    func testAConditionThatNeverHoldsTimesOut() throws {
        let scenario = scratch + "/never.txt"
        try "when file tmp/never exists timeout 1s purge all\n".write(toFile: scenario, atomically: true, encoding: .utf8)
        let result = try run(["--scenario", scenario, "--report", report, container, "--", "sleep", "300"])
        XCTAssertEqual(result.status, 1, "\(result)")
        XCTAssertEqual(result.stderrLines.last,
                       "purgefs: \(scenario):1: when file tmp/never exists timeout 1s purge all: when file tmp/never exists did not hold within 1s")
        assertNothingLeft(result)
        let json = try reportJSON()
        XCTAssertEqual((json["steps"] as? [[String: Any]])?.first?["state"] as? String, "timed_out")
        XCTAssertEqual(json["signal"] as? String, "SIGTERM", "the command was stopped")
    }

    func testAStepThatFailsEndsTheRunWithItsLine() throws {
        let scenario = scratch + "/pin.txt"
        try "at 0s pin Library/Caches/nothing-here\nat 1s purge all\n".write(toFile: scenario, atomically: true, encoding: .utf8)
        let result = try run(["--scenario", scenario, "--report", report, container, "--", "sleep", "300"])
        XCTAssertEqual(result.status, 1, "\(result)")
        XCTAssertEqual(result.stderrLines.last, "purgefs: \(scenario):1: at 0s pin Library/Caches/nothing-here: purgefs pin failed: "
                       + "\(container)/Library/Caches/nothing-here: No such file or directory")
        assertNothingLeft(result)
        let json = try reportJSON()
        XCTAssertEqual((json["steps"] as? [[String: Any]])?.map { $0["state"] as? String }, ["failed", "not_reached"])
        XCTAssertEqual(json["signal"] as? String, "SIGTERM", "the command was stopped")
    }

    /// The app of the crash tests. First start: sync `kept` and its
    /// directory (then, when `appending`, append to it), leave `unsynced`
    /// unsynced, and wait (exit 7 if never killed). Started again on the
    /// crashed state: exit 0 only when `kept` holds what was synced and
    /// `unsynced` is gone.
    static func crashedApp(appendingAfterTheSync appending: Bool) -> String {
        """
        import os, sys, time
        docs = os.environ["PURGEFS_MOUNT"] + "/Documents"
        if os.path.exists(docs + "/kept"):
            ok = open(docs + "/kept", "rb").read() == b"synced" and not os.path.exists(docs + "/unsynced")
            sys.exit(0 if ok else 8)
        fd = os.open(docs + "/kept", os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, b"synced"); os.fsync(fd); os.close(fd)
        d = os.open(docs, os.O_RDONLY | os.O_DIRECTORY); os.fsync(d); os.close(d)
        if \(appending ? "True" : "False"):
            with open(docs + "/kept", "ab") as f: f.write(b" and more")
        with open(docs + "/unsynced", "wb") as f: f.write(b"lost")
        time.sleep(30)
        sys.exit(7)
        """
    }

    func testACrashStepKillsTheCommandAndItsRestartSeesWhatWasSynced() throws {
        // The scenario needs no -o crashable: run adds it for a crash step.
        let scenario = scratch + "/crash.txt"
        try "when file Documents/unsynced exists timeout 30s crash\n".write(toFile: scenario, atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: container + "/Documents", withIntermediateDirectories: true)
        let script = Self.crashedApp(appendingAfterTheSync: true)
        let result = try run(["--scenario", scenario, "--restart-after-crash", "--report", report, container, "--", "python3", "-c", script])
        XCTAssertEqual(result.status, 0, "the restarted command's status: \(result)")
        assertNothingLeft(result)
        let step = try XCTUnwrap((try reportJSON()["steps"] as? [[String: Any]])?.first)
        XCTAssertEqual(step["state"] as? String, "done")
        let detail = step["detail"] as? String ?? ""
        XCTAssertEqual(detail, "the command got SIGKILL; undid 1 name change and 9 unsynced bytes in 1 file; started again; "
                       + "the restarted command exited with status 0", "the bytes appended to kept since its sync")
        XCTAssertEqual(try String(contentsOfFile: container + "/Documents/kept", encoding: .utf8), "synced")
        XCTAssertFalse(FileManager.default.fileExists(atPath: container + "/Documents/unsynced"), "the crash undid its name")
    }

    /// The same recovery with a `restart` step of its own instead of
    /// `--restart-after-crash`: the crash step only kills and crashes, the
    /// restart step starts the command again and says how it ended.
    func testARestartStepAfterACrashStepStartsTheCommandOnTheCrashedState() throws {
        let scenario = scratch + "/crash.txt"
        try "when file Documents/unsynced exists timeout 30s crash\nat 0 restart\n".write(toFile: scenario, atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: container + "/Documents", withIntermediateDirectories: true)
        let script = Self.crashedApp(appendingAfterTheSync: false)
        let result = try run(["--scenario", scenario, "--report", report, container, "--", "python3", "-c", script])
        XCTAssertEqual(result.status, 0, "the restarted command's status: \(result)")
        assertNothingLeft(result)
        let steps = try XCTUnwrap(try reportJSON()["steps"] as? [[String: Any]])
        XCTAssertEqual(steps.map { $0["action"] as? String }, ["crash", "restart"])
        XCTAssertEqual(steps.map { $0["state"] as? String }, ["done", "done"])
        XCTAssertEqual(steps[0]["detail"] as? String, "the command got SIGKILL; undid 1 name change", "no restart of its own")
        XCTAssertEqual(steps[1]["detail"] as? String, "started again; the restarted command exited with status 0")
        XCTAssertEqual(try String(contentsOfFile: container + "/Documents/kept", encoding: .utf8), "synced")
        XCTAssertFalse(FileManager.default.fileExists(atPath: container + "/Documents/unsynced"), "the crash undid its name")
    }

    func testACommandThatCannotStartFailsTheRunAndUnmounts() throws {
        let result = try run(["--report", report, container, "--", scratch + "/no-such-program"])
        XCTAssertEqual(result.status, 1, "\(result)")
        XCTAssertEqual(result.stderrLines.last, "purgefs: run: cannot start \(scratch)/no-such-program: No such file or directory")
        assertNothingLeft(result)
        XCTAssertTrue(try reportJSON()["exit_status"] is NSNull)
    }

    // MARK: Bad input: one line, exit 64, nothing mounted

    func testBadInputIsRefusedBeforeMounting() throws {
        let unknown = scratch + "/unknown.txt", badSize = scratch + "/size.txt"
        try "at 1s squeeze 5M\nat 2s explode\n".write(toFile: unknown, atomically: true, encoding: .utf8)
        try "when available < 12Q purge all\n".write(toFile: badSize, atomically: true, encoding: .utf8)
        let cases: [([String], String)] = [
            ([container, "true"], "purgefs: run: put -- before the command: purgefs run CONTAINER -- COMMAND [ARG...] (see purgefs run --help)"),
            ([container, "--"], "purgefs: run: the command after -- is missing (see purgefs run --help)"),
            (["--scenario", unknown, container, "--", "true"],
             "purgefs: \(unknown):2: unknown action 'explode' (squeeze, external, capacity, purge, pin, unpin, fault, crash, restart, cloud)"),
            (["--scenario", badSize, container, "--", "true"],
             "purgefs: \(badSize):1: when available < 12Q: not a size (bytes, or a number with K, M, G or T)"),
            (["-o", "capacity=huge", container, "--", "true"], "purgefs: capacity=huge: not a size (bytes, or a number with K, M, G or T)"),
            (["--scratch", "-o", "state=/tmp/x", container, "--", "true"],
             "purgefs: run: --scratch gives the copy a fresh state of its own; state= cannot be given with it"),
        ]
        for (arguments, expected) in cases {
            let result = try run(arguments)
            XCTAssertEqual(result.status, 64, "\(result)")
            XCTAssertEqual(result.stderrLines, [expected], "\(result)")
            XCTAssertEqual(result.stdout, "")
            assertNothingLeft(result)
            XCTAssertFalse(FileManager.default.fileExists(atPath: container + "/.purgefs"), "never mounted: \(result)")
        }
    }
}
