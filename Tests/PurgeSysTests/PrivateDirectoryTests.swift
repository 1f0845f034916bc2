import Glibc
import PurgeSys
import XCTest

/// `PrivateDirectory`: made 0700, checked through the opened descriptor;
/// another user's, a writable one or a symbolic link refused with the path
/// and the reason; the owner's own looser one tightened.
final class PrivateDirectoryTests: XCTestCase {
    private func mode(_ path: String) -> mode_t {
        var status = stat()
        XCTAssertEqual(lstat(path, &status), 0, path)
        return status.st_mode & 0o7777
    }

    private func refusal(_ body: () throws(PrivateDirectory.Refusal) -> FileDescriptor) -> PrivateDirectory.Refusal? {
        do {
            try body().closeQuietly()
            return nil
        } catch {
            return error
        }
    }

    func testMadeOwnerOnlyAndLooserOnesTightened() throws {
        let temporary = try TemporaryDirectory()
        try PrivateDirectory.open("made", in: temporary.descriptor, parentPath: temporary.path, create: true).closeQuietly()
        XCTAssertEqual(mode(temporary.path + "/made"), 0o700)
        XCTAssertEqual(mkdir(temporary.path + "/older", 0o755), 0)
        XCTAssertEqual(chmod(temporary.path + "/older", 0o755), 0)
        try PrivateDirectory.open(path: temporary.path + "/older", create: false).closeQuietly()
        XCTAssertEqual(mode(temporary.path + "/older"), 0o700, "an older purgefs's 0755 is tightened")
        // Root's /run/purgefs keeps 0755: records are found by other users.
        XCTAssertEqual(mkdir(temporary.path + "/shared", 0o755), 0)
        try PrivateDirectory.open(path: temporary.path + "/shared", mode: 0o755, create: true).closeQuietly()
        XCTAssertEqual(mode(temporary.path + "/shared"), 0o755)
        let missing = refusal { () throws(PrivateDirectory.Refusal) in try PrivateDirectory.open(path: temporary.path + "/none", create: false) }
        XCTAssertEqual(missing?.isMissing, true)
    }

    func testWritableOnesAreRefusedUnlessTheyMayBeTightened() throws {
        let temporary = try TemporaryDirectory()
        let path = temporary.path + "/open"
        XCTAssertEqual(mkdir(path, 0o777), 0)
        XCTAssertEqual(chmod(path, 0o777), 0)
        let refused = refusal { () throws(PrivateDirectory.Refusal) in try PrivateDirectory.open(path: path, create: true) }
        XCTAssertEqual(refused?.description, "\(path) may be written by its group or others (mode 0777): anyone may have put files in it; "
                       + "remove it, or make it 0700 if what is in it is yours")
        XCTAssertEqual(mode(path), 0o777, "a refused directory is left as it was")
        try PrivateDirectory.open(path: path, create: true, tightensWritable: true).closeQuietly()
        XCTAssertEqual(mode(path), 0o700)
    }

    func testAnotherUsersDirectoryIsRefused() throws {
        let temporary = try TemporaryDirectory()
        let path = temporary.path + "/theirs"
        XCTAssertEqual(mkdir(path, 0o755), 0)
        XCTAssertEqual(chown(path, 65534, 65534), 0)
        let refused = refusal { () throws(PrivateDirectory.Refusal) in try PrivateDirectory.open(path: path, create: true, tightensWritable: true) }
        XCTAssertEqual(refused?.path, path)
        XCTAssertTrue(refused?.reason.hasPrefix("belongs to uid 65534, not to uid \(geteuid())") == true, "\(String(describing: refused))")
        XCTAssertEqual(mode(path), 0o755, "another user's directory is not changed")
        // Checked as root's by someone else: the owner it must have is given.
        XCTAssertNotNil(refusal { () throws(PrivateDirectory.Refusal) in try PrivateDirectory.open(path: path, mode: 0o755, create: false, owner: 0) })
        try PrivateDirectory.open(path: path, mode: 0o755, create: false, owner: 65534).closeQuietly()
    }

    func testSymbolicLinksAndFilesAreRefused() throws {
        let temporary = try TemporaryDirectory()
        XCTAssertEqual(mkdir(temporary.path + "/target", 0o700), 0)
        XCTAssertEqual(symlink(temporary.path + "/target", temporary.path + "/link"), 0)
        let link = refusal { () throws(PrivateDirectory.Refusal) in try PrivateDirectory.open(path: temporary.path + "/link", create: true) }
        XCTAssertEqual(link?.reason, "is a symbolic link: refused, it could lead anywhere")
        XCTAssertEqual(symlink(temporary.path + "/nowhere", temporary.path + "/dangling"), 0)
        let dangling = refusal { () throws(PrivateDirectory.Refusal) in try PrivateDirectory.open(path: temporary.path + "/dangling", create: true) }
        XCTAssertEqual(dangling?.reason, "is a symbolic link: refused, it could lead anywhere")
        XCTAssertFalse(FileManager.default.fileExists(atPath: temporary.path + "/nowhere"), "nothing made through the link")
        XCTAssertEqual(close(open(temporary.path + "/file", O_CREAT | O_WRONLY, 0o600)), 0)
        let file = refusal { () throws(PrivateDirectory.Refusal) in try PrivateDirectory.open(path: temporary.path + "/file", create: true) }
        XCTAssertEqual(file?.reason, "is not a directory")
    }

    func testReadRegularFileRefusesFIFOsAndLongFilesWithoutBlocking() throws {
        let temporary = try TemporaryDirectory()
        XCTAssertEqual(mkfifo(temporary.path + "/fifo", 0o600), 0)
        XCTAssertThrowsError(try temporary.descriptor.readRegularFile("fifo", limit: 100)) { XCTAssertEqual($0 as? Errno, .invalidArgument) }
        let long = open(temporary.path + "/long", O_CREAT | O_WRONLY, 0o600)
        XCTAssertEqual(ftruncate(long, 101), 0)
        close(long)
        XCTAssertThrowsError(try temporary.descriptor.readRegularFile("long", limit: 100)) { XCTAssertEqual($0 as? Errno, Errno(EFBIG)) }
        XCTAssertEqual(try temporary.descriptor.readRegularFile("long", limit: 101).count, 101)
        XCTAssertEqual(symlink(temporary.path + "/long", temporary.path + "/link"), 0)
        XCTAssertThrowsError(try temporary.descriptor.readRegularFile("link", limit: 1000))
    }
}
