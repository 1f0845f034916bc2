import Glibc
import PurgeSys
import XCTest

final class PathsTests: XCTestCase {
    func testCanonicalResolvesSymlinksAndDotDot() throws {
        let directory = try TemporaryDirectory()
        try directory.descriptor.makeDirectory("real", mode: 0o755)
        try directory.descriptor.makeSymbolicLink("link", target: "real")
        let canonical = try Paths.canonical(directory.path)
        XCTAssertEqual(try Paths.canonical(directory.path + "/link/../link/."), canonical + "/real")
        XCTAssertThrowsError(try Paths.canonical(directory.path + "/missing")) { XCTAssertEqual($0 as? Errno, .noEntry) }
    }

    func testIsDirectoryFollowsSymlinksAndExistsDoesNot() throws {
        let directory = try TemporaryDirectory()
        try directory.descriptor.makeDirectory("d", mode: 0o755)
        try directory.descriptor.makeSymbolicLink("to-d", target: "d")
        try directory.descriptor.makeSymbolicLink("dangling", target: "nowhere")
        try FileDescriptor.open("f", in: directory.descriptor, flags: O_WRONLY | O_CREAT, mode: 0o644).close()
        XCTAssertTrue(try Paths.isDirectory(directory.path + "/to-d"))
        XCTAssertFalse(try Paths.isDirectory(directory.path + "/f"))
        XCTAssertThrowsError(try Paths.isDirectory(directory.path + "/dangling")) { XCTAssertEqual($0 as? Errno, .noEntry) }
        XCTAssertTrue(Paths.exists(directory.path + "/dangling"))
        XCTAssertFalse(Paths.exists(directory.path + "/nowhere"))
    }

    func testLinkStatusDoesNotFollowAndRemoveFileRemoves() throws {
        let directory = try TemporaryDirectory()
        try directory.descriptor.makeSymbolicLink("dangling", target: "nowhere")
        try FileDescriptor.open("f", in: directory.descriptor, flags: O_WRONLY | O_CREAT, mode: 0o640).close()
        XCTAssertEqual(try Paths.linkStatus(directory.path + "/dangling").st_mode & S_IFMT, S_IFLNK)
        XCTAssertEqual(try Paths.linkStatus(directory.path + "/f").st_mode & S_IFMT, S_IFREG)
        XCTAssertThrowsError(try Paths.linkStatus(directory.path + "/nowhere")) { XCTAssertEqual($0 as? Errno, .noEntry) }
        try Paths.removeFile(directory.path + "/f")
        XCTAssertFalse(Paths.exists(directory.path + "/f"))
        XCTAssertThrowsError(try Paths.removeFile(directory.path + "/f")) { XCTAssertEqual($0 as? Errno, .noEntry) }
        XCTAssertThrowsError(try Paths.removeFile(directory.path)) { XCTAssertEqual($0 as? Errno, .isDirectory) }
    }

    func testWorkingDirectoryFollowsChangeDirectory() throws {
        let directory = try TemporaryDirectory()
        let before = try Paths.workingDirectory()
        defer { try? CurrentProcess.changeDirectory(before) }
        try CurrentProcess.changeDirectory(directory.path)
        XCTAssertEqual(try Paths.workingDirectory(), try Paths.canonical(directory.path))
        XCTAssertThrowsError(try CurrentProcess.changeDirectory(directory.path + "/missing")) {
            XCTAssertEqual($0 as? Errno, .noEntry)
        }
    }

    func testUnmountOfAPlainDirectoryFails() throws {
        let directory = try TemporaryDirectory()
        // EINVAL as root (not a mount point), EPERM otherwise.
        XCTAssertThrowsError(try Paths.unmount(directory.path)) {
            XCTAssertTrue([Errno.invalidArgument, .notPermitted].contains($0 as? Errno), "\($0)")
        }
    }
}
