import Foundation
import Glibc
import PurgeCore
import XCTest

/// What purgefs leaves running lets go of its caller: a caller that reads a
/// mount command's output to its end (`out=$(mount ...)`, Python's
/// `subprocess.run(capture_output=True)`) gets that end when the command
/// returns, in every way of mounting; and a container unmounted can be
/// mounted again at once.
final class CallerPipeTests: MountedTestCase {
    override var mountsInSetUp: Bool { false }

    var bin: String { fixture.binary }

    override func prepareContainer() throws {
        XCTAssertEqual(mkdir(fixture.container + "/Documents", 0o755), 0)
        try "report\n".write(toFile: fixture.container + "/Documents/report.txt", atomically: false, encoding: .utf8)
    }

    /// Runs `arguments` with stdout and stderr through one pipe read to its
    /// end by `cat`, as `$(...)` does: the pipeline ends only once every
    /// process holding the pipe's write end has closed it.
    func runReadingOutputToItsEnd(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> CommandResult {
        let result = try Subprocess.run(["sh", "-c", "\"$@\" 2>&1 | cat", "sh"] + arguments, timeout: 20)
        XCTAssertFalse(result.timedOut, "reading the output of `\(arguments.joined(separator: " "))` to its end never returned: "
            + "something it left running holds the pipe (\(pipeHolders()))", file: file, line: line)
        XCTAssertEqual(result.status, 0, "\(result)", file: file, line: line)
        return result
    }

    /// This fixture's purgefs processes whose standard descriptors are a pipe.
    func pipeHolders() -> [String] {
        fixture.ownProcesses().compactMap { pid in
            let pipes = (0...2).compactMap { fd in
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"))
                    .flatMap { $0.hasPrefix("pipe:") ? "fd \(fd) \($0)" : nil }
            }
            return pipes.isEmpty ? nil : "pid \(pid): \(pipes.joined(separator: ", "))"
        }
    }

    func assertServedAndUnmount(_ mountpoint: String, file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(try? String(contentsOfFile: mountpoint + "/Documents/report.txt", encoding: .utf8), "report\n",
                       "the mount serves", file: file, line: line)
        XCTAssertEqual(pipeHolders(), [], "no process left running holds a pipe of the caller's", file: file, line: line)
        let result = try Subprocess.run([bin, "unmount", mountpoint], timeout: 20)
        XCTAssertEqual(result.status, 0, "\(result)", file: file, line: line)
    }

    func testPurgefsMountReturnsToACallerReadingItsOutput() throws {
        _ = try runReadingOutputToItsEnd([bin, "mount", fixture.container, fixture.mountpoint, "-o", "capacity=64M"])
        try assertServedAndUnmount(fixture.mountpoint)
    }

    /// The form mount.fuse3 runs, and mount(8) itself (through mount.fuse3's
    /// `PROGRAM#SOURCE` form: mount(8) resets PATH, see CommandLineTests).
    func testMountCommandAndFstabLineReturnToACallerReadingTheirOutput() throws {
        _ = try runReadingOutputToItsEnd([bin, fixture.container, fixture.mountpoint, "-o", "rw,capacity=64M"])
        try assertServedAndUnmount(fixture.mountpoint)

        let source = "\(bin)#\(fixture.container)"
        _ = try runReadingOutputToItsEnd(["mount", "-t", "fuse", "-o", "capacity=64M", source, fixture.mountpoint])
        try assertServedAndUnmount(fixture.mountpoint)

        let fstab = fixture.base + "/fstab"
        try "\(source) \(fixture.mountpoint) fuse capacity=64M 0 0\n".write(toFile: fstab, atomically: false, encoding: .utf8)
        _ = try runReadingOutputToItsEnd(["mount", "-T", fstab, fixture.mountpoint])
        try assertServedAndUnmount(fixture.mountpoint)
    }

    func testRunReturnsToACallerReadingItsOutput() throws {
        let result = try runReadingOutputToItsEnd([bin, "run", "-o", "capacity=64M", fixture.container, "--", "cat", "Documents/report.txt"])
        XCTAssertTrue(result.stdout.contains("report"), "the command ran on the mount: \(result)")
        XCTAssertFalse(MountTable.isMounted(fixture.container), "run unmounted")
    }

    /// The first lines of many test set-ups: each remount is served, never
    /// refused as "already mounted" by the daemon that was just unmounted.
    func testUnmountThenMountAtOnce() throws {
        let payload = [UInt8](repeating: 0x5a, count: 1 << 20)
        for round in 0..<4 {
            let mounted = try Subprocess.run([bin, "mount", fixture.container, fixture.mountpoint, "-o", "capacity=64M"], timeout: 30)
            XCTAssertEqual(mounted.status, 0, "round \(round): \(mounted)")
            guard mounted.status == 0 else { return }
            try Data(payload).write(to: URL(fileURLWithPath: fixture.mountpoint + "/Documents/round-\(round).bin"))
            let unmounted = try Subprocess.run([bin, "unmount", fixture.mountpoint], timeout: 20)
            XCTAssertEqual(unmounted.status, 0, "round \(round): \(unmounted)")
        }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: fixture.container + "/Documents/round-3.bin")), Data(payload))
    }

    /// `fusermount3 -u` returns before the daemon ends: a mount made at once
    /// waits for that daemon to let go instead of refusing.
    func testMountRightAfterFusermountWaitsForTheLeavingDaemon() throws {
        for round in 0..<3 {
            let mounted = try Subprocess.run([bin, "mount", fixture.container, fixture.mountpoint, "-o", "capacity=64M"], timeout: 30)
            XCTAssertEqual(mounted.status, 0, "round \(round): \(mounted)")
            guard mounted.status == 0 else { return }
            try Data(repeating: 1, count: 1 << 20).write(to: URL(fileURLWithPath: fixture.mountpoint + "/Documents/f.bin"))
            XCTAssertEqual(try Subprocess.run(["fusermount3", "-u", fixture.mountpoint], timeout: 20).status, 0)
        }
    }
}
