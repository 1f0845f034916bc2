internal import CLinux
import Foundation
import Glibc
import XCTest

/// Through the mount, the state directory (`CONTAINER/.purgefs`) does not
/// exist: not listed, not reachable, not creatable, and never touched.
final class StateDirectoryTests: MountedTestCase {
    var state: String { fixture.container + "/.purgefs" }
    let marker = "state marker\n"

    override func prepareContainer() throws {
        XCTAssertEqual(mkdir(state, 0o755), 0)
        try marker.write(toFile: state + "/marker", atomically: false, encoding: .utf8)
        try "visible\n".write(toFile: fixture.container + "/visible", atomically: false, encoding: .utf8)
        XCTAssertEqual(mkdir(fixture.container + "/sub", 0o755), 0)
    }

    func errnoOf(_ result: Int32) -> Int32 { result == 0 ? 0 : errno }

    func assertStateUntouched(file: StaticString = #filePath, line: UInt = #line) {
        var st = stat()
        XCTAssertEqual(lstat(state, &st), 0, "the backing state directory is gone", file: file, line: line)
        XCTAssertEqual(st.st_mode & S_IFMT, S_IFDIR, "the backing state directory is no longer a directory", file: file, line: line)
        XCTAssertEqual(try? String(contentsOfFile: state + "/marker", encoding: .utf8), marker,
                       "the marker in the state directory changed", file: file, line: line)
        for name in ["intruder", "x", "moved-in"] {
            XCTAssertNotEqual(access(state + "/" + name, F_OK), 0, "\(name) appeared in the state directory", file: file, line: line)
        }
    }

    func testNotListedAndNotReachable() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: fixture.mountpoint)
        XCTAssertEqual(Set(names), ["visible", "sub"], "readdir of the mount root")
        let m = fixture.mountpoint + "/.purgefs"
        var st = stat()
        XCTAssertEqual(errnoOf(lstat(m, &st)), ENOENT, "lstat mnt/.purgefs")
        XCTAssertEqual(errnoOf(stat(m, &st)), ENOENT, "stat mnt/.purgefs")
        XCTAssertEqual(errnoOf(lstat(m + "/marker", &st)), ENOENT, "lstat mnt/.purgefs/marker")
        XCTAssertEqual(errnoOf(lstat(fixture.mountpoint + "/sub/../.purgefs", &st)), ENOENT, "lstat via sub/..")
        let fd = open(m + "/marker", O_RDONLY | O_CLOEXEC)
        XCTAssertEqual(fd, -1)
        XCTAssertEqual(errno, ENOENT, "open mnt/.purgefs/marker")
        if fd >= 0 { close(fd) }
        XCTAssertEqual(errnoOf(access(m, F_OK)), ENOENT, "access")
        XCTAssertEqual(errnoOf(chmod(m, 0o777)), ENOENT, "chmod")
        XCTAssertEqual(errnoOf(rmdir(m)), ENOENT, "rmdir")
        XCTAssertEqual(errnoOf(unlink(m)), ENOENT, "unlink")
        XCTAssertEqual(errnoOf(unlink(m + "/marker")), ENOENT, "unlink marker")
        XCTAssertEqual(errnoOf(rename(m, fixture.mountpoint + "/stolen")), ENOENT, "rename away")
        var buffer = [UInt8](repeating: 0, count: 64)
        XCTAssertEqual(clinux_lgetxattr(m, "user.x", &buffer, 64), -1)
        XCTAssertEqual(errno, ENOENT, "getxattr")
        XCTAssertEqual(errnoOf(Int32(truncatingIfNeeded: readlink(m, &buffer, 64))), ENOENT, "readlink")
        XCTAssertEqual(errnoOf(mkdir(m + "/x", 0o755)), ENOENT, "mkdir inside")
        assertStateUntouched()
    }

    func testCannotBeCreatedOrReplaced() throws {
        let m = fixture.mountpoint + "/.purgefs"
        try "mine\n".write(toFile: fixture.mountpoint + "/intruder", atomically: false, encoding: .utf8)
        func assertRefused(_ what: String, _ result: Int32) {
            let code = errnoOf(result)
            XCTAssertNotEqual(code, 0, "\(what) succeeded")
            XCTAssertNotEqual(code, EEXIST, "\(what) reports EEXIST: the state directory shows through")
        }
        assertRefused("mkdir .purgefs", mkdir(m, 0o755))
        let created = open(m, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        assertRefused("open O_CREAT .purgefs", created < 0 ? -1 : 0)
        if created >= 0 { close(created) }
        let exclusive = open(m, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        assertRefused("open O_CREAT|O_EXCL .purgefs", exclusive < 0 ? -1 : 0)
        if exclusive >= 0 { close(exclusive) }
        assertRefused("mknod .purgefs", mknod(m, S_IFIFO | 0o644, 0))
        assertRefused("symlink .purgefs", symlink("intruder", m))
        assertRefused("link intruder .purgefs", link(fixture.mountpoint + "/intruder", m))
        assertRefused("rename intruder .purgefs", rename(fixture.mountpoint + "/intruder", m))
        let exchanged = clinux_renameat2(AT_FDCWD, fixture.mountpoint + "/intruder", AT_FDCWD, m, clinux_RENAME_EXCHANGE)
        XCTAssertNotEqual(exchanged, 0, "RENAME_EXCHANGE with .purgefs succeeded")
        XCTAssertEqual(exchanged == 0 ? 0 : errno, ENOENT, "RENAME_EXCHANGE with .purgefs")
        assertRefused("rename dir over .purgefs", {
            mkdir(fixture.mountpoint + "/moved-in", 0o755)
            return rename(fixture.mountpoint + "/moved-in", m)
        }())

        var st = stat()
        XCTAssertEqual(errnoOf(lstat(m, &st)), ENOENT, "after the attempts, .purgefs is still invisible")
        XCTAssertFalse(try FileManager.default.contentsOfDirectory(atPath: fixture.mountpoint).contains(".purgefs"))
        XCTAssertEqual(try String(contentsOfFile: fixture.container + "/intruder", encoding: .utf8), "mine\n",
                       "the file that was to be renamed over .purgefs stays where it was")
        assertStateUntouched()
    }

    /// Only the container root's `.purgefs` is hidden.
    func testSameNameElsewhereIsOrdinary() throws {
        let nested = fixture.mountpoint + "/sub/.purgefs"
        XCTAssertEqual(errnoOf(mkdir(nested, 0o755)), 0, "mkdir sub/.purgefs")
        try "ordinary\n".write(toFile: nested + "/f", atomically: false, encoding: .utf8)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: fixture.mountpoint + "/sub"), [".purgefs"])
        XCTAssertEqual(try String(contentsOfFile: fixture.container + "/sub/.purgefs/f", encoding: .utf8), "ordinary\n")
        assertStateUntouched()
    }
}
