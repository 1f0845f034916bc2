import Foundation
import Glibc
import XCTest

/// suid/sgid clearing under killpriv v2 (issue 16): the kernel no longer
/// clears the bits itself but tells the daemon, which writes as root. A
/// write, a truncation and an `O_TRUNC` open by another user must leave the
/// same mode as natively, seen at once through the mount (the kernel's
/// cached mode is dropped) and in the backing file; root's writes keep the
/// bits, as natively.
final class KillPrivilegeTests: OtherUserTestCase {
    /// Modes before the change: suid and sgid with group execute, sgid with
    /// group execute, sgid without it (mandatory locking: kept for a member
    /// of the file's group, cleared for anyone else), suid alone.
    static let modes: [mode_t] = [0o6777, 0o2777, 0o2767, 0o4766]

    /// Makes `name` in both trees, owned by the other user, and sets `mode`
    /// after the chown (a chown clears the bits). `group` owns the file.
    func make(_ name: String, mode: mode_t, group: gid_t) throws {
        for root in [fixture.native, fixture.mountpoint] {
            let path = root + "/" + name
            try write(path, "abc\n", mode: 0o600)
            XCTAssertEqual(chown(path, Self.uid, group), 0, "chown \(path): \(Errno.name(errno))")
            XCTAssertEqual(chmod(path, mode), 0, "chmod \(path): \(Errno.name(errno))")
        }
    }

    func modeOf(_ path: String) -> mode_t? {
        var status = stat()
        return stat(path, &status) == 0 ? status.st_mode & 0o7777 : nil
    }

    /// Runs `change` (a shell command on `$f`) as the other user on a file
    /// of each mode and group, and compares the mode it leaves.
    func checkClearing(_ change: String) throws {
        var index = 0
        for group in [Self.gid, 0] {
            for mode in Self.modes {
                index += 1
                let name = "f\(index)"
                try make(name, mode: mode, group: group)
                let results = try assertSameAsNative([["sh", "-c", "f=\(name); \(change) && stat -c %a \"$f\""]])
                XCTAssertEqual(results.first?.status, 0, "natively: \(results)")
                let native = modeOf(fixture.native + "/" + name)
                XCTAssertEqual(modeOf(fixture.mountpoint + "/" + name), native, "\(change) on \(String(mode, radix: 8)) group \(group)")
                XCTAssertEqual(modeOf(fixture.container + "/" + name), native, "backing file, \(change) on \(String(mode, radix: 8))")
            }
        }
        // The cases mean something: natively, suid went and one sgid stayed.
        XCTAssertEqual(modeOf(fixture.native + "/f1"), 0o777)
        XCTAssertEqual(modeOf(fixture.native + "/f3"), 0o2767)
        XCTAssertEqual(modeOf(fixture.native + "/f7"), 0o767)
    }

    func testWriteByAnotherUserClearsSetIDAsNatively() throws {
        try checkClearing("echo more >> \"$f\"")
    }

    func testTruncateByAnotherUserClearsSetIDAsNatively() throws {
        try checkClearing("truncate -s 1 \"$f\"")
    }

    func testTruncatingOpenByAnotherUserClearsSetIDAsNatively() throws {
        try checkClearing(": > \"$f\"")
    }

    func testRootKeepsSetIDOnWrite() throws {
        try make("mine", mode: 0o6777, group: Self.gid)
        for root in [fixture.native, fixture.mountpoint] {
            let fd = open(root + "/mine", O_WRONLY | O_APPEND | O_CLOEXEC)
            XCTAssertGreaterThanOrEqual(fd, 0)
            XCTAssertEqual(Glibc.write(fd, "x", 1), 1)
            XCTAssertEqual(ftruncate(fd, 2), 0)
            close(fd)
            XCTAssertEqual(modeOf(root + "/mine"), 0o6777, root)
        }
        XCTAssertEqual(modeOf(fixture.container + "/mine"), 0o6777)
    }
}
