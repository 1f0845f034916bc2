import Foundation
import Glibc
import PurgeCore
import PurgeSys
import XCTest

/// `purgefs demo` run as a user runs it: the whole tour, with `TMPDIR`
/// pointing at a fresh directory of the test's, so that what the demo leaves
/// behind (a mount, its directory) is easy to see and cannot be confused
/// with anyone else's mounts.
final class DemoTourTests: XCTestCase {
    private var directory: CommandScratch!
    private var scratch: String { directory.path }
    private var environment: [String: String] { directory.environment }
    private var binary = ""

    override func setUpWithError() throws {
        binary = try MountFixture.locateBinary()
        directory = try CommandScratch(prefix: "purgefs-demo-test")
    }

    override func tearDownWithError() throws {
        directory?.remove()
    }

    private func demo(_ arguments: String...) throws -> CommandResult {
        let result = try Subprocess.run([binary, "demo"] + arguments, timeout: 120, environment: environment)
        XCTAssertFalse(result.timedOut, "\(result)")
        return result
    }

    private func assertNothingLeftMounted(_ result: CommandResult, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(MountTable.mounts(under: scratch).map(\.mountPoint), [], "no mount left: \(result)", file: file, line: line)
        XCTAssertFalse(((try? MountTable.current())?.entries ?? []).contains { $0.isPurgefs && $0.source.hasPrefix(scratch + "/") },
                       "no purgefs mount of the demo's container anywhere: \(result)", file: file, line: line)
    }

    private func leftovers() -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: scratch)) ?? ["(unreadable)"]
    }

    func testTheTourRunsAndLeavesNothingBehind() throws {
        let result = try demo()
        XCTAssertEqual(result.status, 0, "\(result)")
        XCTAssertEqual(result.stderr, "", "\(result)")
        let out = result.stdout
        for expected in ["$ purgefs mount container mnt -o capacity=64M,low=8M,high=10M",
                         "fuse.purgefs",
                         "$ df -h mnt",
                         "user.purgefs.NAME",
                         "$ purgefs usage mnt",
                         "$ purgefs purge mnt --bytes 1M", "Purged 4 files",
                         "$ purgefs space mnt --capacity",
                         "the space monitor purged 3 files",
                         "$ purgefs log mnt", "manual ", "monitor ", "7 files purged",
                         "No space left on device (ENOSPC)",
                         "Documents is intact",
                         "$ purgefs unmount mnt",
                         "Removed " + scratch + "/purgefs-demo."] {
            XCTAssertTrue(out.contains(expected), "mentions \(expected): \(result)")
        }
        XCTAssertFalse(out.contains("Cleaning up"), "the tour unmounted by itself: \(result)")
        assertNothingLeftMounted(result)
        XCTAssertEqual(leftovers(), [], "its temporary directory is gone")
    }

    /// The figures are the mount's: the root's capacity before the squeeze is
    /// the mount option, and the log's lines are the purged files.
    func testFiguresAreReadFromTheMount() throws {
        let result = try demo()
        XCTAssertEqual(result.status, 0, "\(result)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        let capacity = lines.first { $0.hasPrefix("  capacity ") }
        XCTAssertEqual(capacity?.split(separator: " ").dropFirst().first, "67108864", "\(result)")
        for path in ["Library/Caches/thumbnails/t-0001.jpg", "tmp/download.part", "tmp/upload-queue.db"] {
            XCTAssertTrue(lines.contains { $0.contains(" delete ") && $0.hasSuffix(path) }, "log names \(path): \(result)")
        }
        XCTAssertTrue(lines.contains("(none: nothing purgeable is left)"), "\(result)")

        // The clone step: one content id and the report's size shared, then
        // two content ids and nothing shared once the copy is written.
        let ids = lines.filter { $0.hasPrefix("  content_id ") }.map { $0.split(separator: " ")[1] }
        XCTAssertEqual(ids.count, 4, "\(result)")
        if ids.count == 4 {
            XCTAssertEqual(ids[0], ids[1], "a clone and its original share a content id")
            XCTAssertNotEqual(ids[2], ids[3], "not once the copy is written")
        }
        let savings = lines.filter { $0.hasPrefix("  clone_savings ") }.map { $0.split(separator: " ")[1] }
        // With block sharing (the default; not with `PURGEFS_BLOCK_SHARING=0`,
        // which the demo's daemon would inherit) the copy keeps sharing the
        // report's four whole 64 KiB blocks the append left alone (the demo's
        // directory is on ext4 here).
        let sharesBlocks = getenv("PURGEFS_BLOCK_SHARING").map { String(cString: $0) != "0" } ?? true
        XCTAssertEqual(savings, ["307200", sharesBlocks ? "262144" : "0"], "\(result)")
    }

    func testKeepLeavesTheContainerButNotTheMount() throws {
        let result = try demo("--keep")
        XCTAssertEqual(result.status, 0, "\(result)")
        assertNothingLeftMounted(result)
        let kept = leftovers()
        XCTAssertEqual(kept.count, 1, "\(kept)")
        let base = scratch + "/" + (kept.first ?? "")
        XCTAssertTrue(result.stdout.contains("Kept the container at \(base)/container"), "\(result)")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: base), ["container"])
        XCTAssertEqual(try String(contentsOfFile: base + "/container/Documents/notes.txt", encoding: .utf8),
                       "Groceries: oat milk, lemons, coffee\n")
        XCTAssertTrue(FileManager.default.fileExists(atPath: base + "/container/.purgefs/purge.log"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: base + "/container/Library/Caches/video/clip.mp4"),
                       "purged for good")
    }

    func testHelpAndBadFlags() throws {
        let help = try demo("--help")
        XCTAssertEqual(help.status, 0, "\(help)")
        XCTAssertTrue(help.stdout.hasPrefix("Usage: purgefs demo [--keep]"), "\(help)")
        XCTAssertEqual(help.stderr, "")

        for (arguments, message) in [(["--bogus"], "purgefs: demo: unknown flag '--bogus'"),
                                     (["somewhere"], "purgefs: demo: unexpected argument 'somewhere'")] {
            let result = try Subprocess.run([binary, "demo"] + arguments, timeout: 30, environment: environment)
            XCTAssertEqual(result.status, 64, "\(result)")
            XCTAssertEqual(result.stderrLines.count, 1, "\(result)")
            XCTAssertTrue(result.stderr.hasPrefix(message), "\(result)")
            XCTAssertEqual(result.stdout, "", "\(result)")
        }
        XCTAssertEqual(leftovers(), [], "nothing made for a usage error")
    }

    func testAFailedStepIsOneLineAndExitsOne() throws {
        var environment = self.environment
        environment["TMPDIR"] = scratch + "/missing"
        let result = try Subprocess.run([binary, "demo"], timeout: 30, environment: environment)
        XCTAssertEqual(result.status, 1, "\(result)")
        XCTAssertEqual(result.stderrLines, ["purgefs: demo: cannot create a temporary directory like "
            + scratch + "/missing/purgefs-demo.XXXXXX: No such file or directory"], "\(result)")
        assertNothingLeftMounted(result)
    }

    /// Ctrl-C once the container is mounted: the demo stops after the step
    /// it is in, unmounts, removes its directory and says why in one line.
    /// The demo is stopped (SIGSTOP) while the signal is sent, so where it is
    /// does not depend on timing: mounted, and not at its own unmount yet.
    func testAnInterruptUnmountsAndRemovesEverything() throws {
        // A demo stopped once it had reached its own unmount tests nothing:
        // another is run (a timing miss is no skip, and five misses fail).
        for _ in 0..<5 {
            if try interruptOnce() { return }
        }
        XCTFail("in five runs the demo had always reached its own unmount before it was stopped")
    }

    /// One run of `testAnInterruptUnmountsAndRemovesEverything`: false
    /// when the demo had reached its own unmount before it was stopped.
    private func interruptOnce() throws -> Bool {
        let outPath = scratch + ".out", errPath = scratch + ".err"
        defer {
            unlink(outPath)
            unlink(errPath)
        }
        let process = try Subprocess.spawn([binary, "demo"], stdoutPath: outPath, stderrPath: errPath, environment: environment)
        let pid = process.processIdentifier
        let deadline = Date().addingTimeInterval(60)
        while MountTable.mounts(under: scratch).isEmpty {
            guard process.isRunning, Date() < deadline else {
                kill(pid, SIGKILL)
                XCTFail("the demo never mounted: \((try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")")
                return true
            }
            usleep(1_000)
        }
        XCTAssertEqual(kill(pid, SIGSTOP), 0)
        let before = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
        let mountedWhileStopped = !MountTable.mounts(under: scratch).isEmpty
        XCTAssertEqual(kill(pid, SIGINT), 0)
        XCTAssertEqual(kill(pid, SIGCONT), 0)
        XCTAssertTrue(Subprocess.wait(process, timeout: 60), "the demo ends after SIGINT")
        guard mountedWhileStopped, !before.contains("== Unmount") else {
            XCTAssertEqual(MountTable.mounts(under: scratch).map(\.mountPoint), [], "a missed run leaves nothing mounted")
            return false
        }
        let stderr = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
        let stdout = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
        XCTAssertEqual(process.terminationStatus, 1, "stdout: \(stdout)\nstderr: \(stderr)")
        XCTAssertEqual(stderr, "purgefs: demo: interrupted by SIGINT\n")
        XCTAssertTrue(stdout.contains("(Cleaning up: unmounted " + scratch + "/purgefs-demo."), stdout)
        XCTAssertEqual(MountTable.mounts(under: scratch).map(\.mountPoint), [])
        XCTAssertEqual(leftovers(), [], "its temporary directory is gone")
        return true
    }
}
