import Glibc
import XCTest
@testable import PurgeCommand

/// An in-place mount hides the state directory under the mountpoint; the
/// daemon's log must still land in the backing directory.
final class DaemonLogTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        var template = Array("/tmp/purgefs-daemonlog-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw XCTSkip("mkdtemp failed") }
        directory = String(cString: made)
        XCTAssertEqual(mkdir(directory + "/.purgefs", 0o755), 0)
    }

    override func tearDown() {
        umount2(directory, Int32(MNT_DETACH))
        unlink(directory + "/.purgefs/daemon.log")
        rmdir(directory + "/.purgefs")
        rmdir(directory)
    }

    func testLogLandsUnderneathAMountOverTheContainer() throws {
        let log = DaemonLog(stateDirectory: directory + "/.purgefs", mountpoint: directory)
        guard mount("tmpfs", directory, "tmpfs", 0, nil) == 0 else {
            throw XCTSkip("cannot mount tmpfs here (needs root): \(SystemError.current)")
        }
        XCTAssertFalse(FileSystemCalls.exists(directory + "/.purgefs"), "the mount should hide the state directory")
        let fd = try XCTUnwrap(log.openLog())
        try FileSystemCalls.writeAll(fd, "hello\n")
        close(fd)
        XCTAssertEqual(umount2(directory, 0), 0)
        let text = String(decoding: try FileSystemCalls.readFile(directory + "/.purgefs/daemon.log"), as: UTF8.self)
        XCTAssertEqual(text, "hello\n")
    }

    func testSeparateMountpointUsesTheAbsolutePath() throws {
        let log = DaemonLog(stateDirectory: directory + "/.purgefs", mountpoint: "/nonexistent/purgefs-view")
        let fd = try XCTUnwrap(log.openLog())
        close(fd)
        XCTAssertTrue(FileSystemCalls.exists(directory + "/.purgefs/daemon.log"))
    }

    func testMissingStateDirectoryGivesNoLog() {
        XCTAssertNil(DaemonLog(stateDirectory: directory + "/missing", mountpoint: "/nonexistent").openLog())
    }
}
