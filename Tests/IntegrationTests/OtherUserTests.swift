import Foundation
import Glibc
import XCTest

/// Other users through `-o allow_other,default_permissions`: what they
/// create is theirs, they may chown to their supplementary groups, and they
/// are refused what they may not read or write — the same as natively.
/// Commands run as uid/gid 65534 through `setpriv`, from inside the tree
/// (relative paths), so their messages are comparable word for word.
class OtherUserTestCase: ParityTestCase {
    override var mountOptions: [String] { ["allow_other", "default_permissions"] }

    static let uid: uid_t = 65534
    static let gid: gid_t = 65534
    static let supplementaryGroup: gid_t = 100

    override func prepareContainer() throws {
        for root in [fixture.container, fixture.native] {
            XCTAssertEqual(chmod(root, 0o777), 0)
        }
    }

    /// Runs `arguments` as the other user with `root` as the working directory.
    func runAs(_ root: String, _ arguments: [String], groups: [gid_t] = []) throws -> CommandResult {
        let groupOption = groups.isEmpty ? "--clear-groups" : "--groups=" + groups.map(String.init).joined(separator: ",")
        return try Subprocess.run(
            ["setpriv", "--reuid=\(Self.uid)", "--regid=\(Self.gid)", groupOption, "--"] + arguments,
            cwd: root, timeout: 20)
    }

    /// Runs each command on both sides; their exit status, stdout and
    /// stderr must match. Returns the native results for sanity checks.
    @discardableResult
    func assertSameAsNative(_ commands: [[String]], groups: [gid_t] = [], file: StaticString = #filePath, line: UInt = #line) throws -> [CommandResult] {
        var nativeResults: [CommandResult] = []
        for command in commands {
            let native = try runAs(fixture.native, command, groups: groups)
            let mounted = try runAs(fixture.mountpoint, command, groups: groups)
            XCTAssertFalse(mounted.timedOut, "timed out through the mount: \(command)", file: file, line: line)
            if native.status != mounted.status || native.stdout != mounted.stdout || native.stderr != mounted.stderr {
                XCTFail("`\(command.joined(separator: " "))` as uid \(Self.uid)\n  native: status \(native.status) stdout \(native.stdout.debugDescription) stderr \(native.stderr.debugDescription)\n  mount:  status \(mounted.status) stdout \(mounted.stdout.debugDescription) stderr \(mounted.stderr.debugDescription)", file: file, line: line)
            }
            nativeResults.append(native)
        }
        return nativeResults
    }

    func ownerOf(_ path: String) -> (uid_t, gid_t)? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        return (st.st_uid, st.st_gid)
    }

    func checkCreatedObjectsBelongToTheCaller() throws {
        try assertSameAsNative([
            ["touch", "file"],
            ["mkdir", "dir"],
            ["mkdir", "dir/sub"],
            ["ln", "-s", "file", "link"],
            ["mkfifo", "fifo"],
            ["ln", "file", "hard"],
            ["sh", "-c", "echo data > dir/written"],
            ["mv", "dir/written", "moved"],
            ["cp", "moved", "copy"],
        ])
        for name in ["file", "dir", "dir/sub", "link", "fifo", "hard", "moved", "copy"] {
            guard let owner = ownerOf(fixture.mountpoint + "/" + name) else {
                XCTFail("\(name) missing through the mount")
                continue
            }
            XCTAssertEqual(owner.0, Self.uid, "owner of \(name) created by uid \(Self.uid) through the mount")
            XCTAssertEqual(owner.1, Self.gid, "group of \(name) created by gid \(Self.gid) through the mount")
            let backing = ownerOf(fixture.container + "/" + name)
            XCTAssertEqual(backing?.0, Self.uid, "owner of \(name) in the backing container")
            XCTAssertEqual(backing?.1, Self.gid, "group of \(name) in the backing container")
        }
        // Through the mount: in the backing store `copy` (a clone, without
        // reflinks) is one more hard link of `moved`'s data.
        XCTAssertEqual(TreeSnapshot.take(fixture.native), TreeSnapshot.take(fixture.mountpoint))
    }

    func checkChownToSupplementaryGroup() throws {
        let results = try assertSameAsNative([
            ["touch", "file"],
            ["chgrp", "\(Self.supplementaryGroup)", "file"],
            ["chgrp", "0", "file"],
            ["mkdir", "dir"],
            ["chown", "\(Self.uid):\(Self.supplementaryGroup)", "dir"],
            ["chown", "0", "dir"],
            ["stat", "-c", "%u:%g %a", "file", "dir"],
        ], groups: [Self.supplementaryGroup])
        XCTAssertEqual(results[1].status, 0, "natively, chgrp to a supplementary group works")
        XCTAssertNotEqual(results[2].status, 0, "natively, chgrp to a foreign group fails")
        XCTAssertEqual(ownerOf(fixture.mountpoint + "/file")?.1, Self.supplementaryGroup)
        XCTAssertEqual(ownerOf(fixture.container + "/file")?.1, Self.supplementaryGroup)
        XCTAssertEqual(ownerOf(fixture.container + "/dir")?.1, Self.supplementaryGroup)
    }

    /// Files root made: the other user is refused what its mode refuses.
    func checkPermissionDenied() throws {
        for root in [fixture.native, fixture.mountpoint] {
            try write(root + "/secret", "top secret\n", mode: 0o600)
            try write(root + "/public", "for everyone\n", mode: 0o644)
            XCTAssertEqual(mkdir(root + "/private", 0o700), 0)
            try write(root + "/private/inside", "hidden\n", mode: 0o644)
            XCTAssertEqual(mkdir(root + "/sticky", 0o1777), 0)
            try write(root + "/sticky/roots", "root's\n", mode: 0o666)
        }
        let results = try assertSameAsNative([
            ["cat", "secret"],
            ["cat", "public"],
            ["sh", "-c", "echo more >> public"],
            ["sh", "-c", "test -r secret; echo $?"],
            ["sh", "-c", "test -r public; echo $?"],
            ["sh", "-c", "test -w public; echo $?"],
            ["ls", "private"],
            ["cat", "private/inside"],
            ["touch", "private/new"],
            ["chmod", "777", "public"],
            ["truncate", "-s", "0", "public"],
            ["rm", "-f", "sticky/roots"],
            ["sh", "-c", "echo x > sticky/roots"],
            ["rm", "secret"],
            ["ls"],
        ])
        XCTAssertTrue(results[0].stderr.contains("Permission denied"), "natively: \(results[0])")
        XCTAssertEqual(results[1].stdout, "for everyone\n")
        XCTAssertEqual(try String(contentsOfFile: fixture.container + "/public", encoding: .utf8), "for everyone\n")
        XCTAssertEqual(try String(contentsOfFile: fixture.container + "/private/inside", encoding: .utf8), "hidden\n")
        XCTAssertEqual(try String(contentsOfFile: fixture.container + "/sticky/roots", encoding: .utf8),
                       try String(contentsOfFile: fixture.native + "/sticky/roots", encoding: .utf8))
        XCTAssertEqual(TreeSnapshot.take(fixture.container, skipping: [".purgefs"]), TreeSnapshot.take(fixture.native))
    }

    func write(_ path: String, _ text: String, mode: mode_t) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw SubprocessError("create \(path): \(Errno.name(errno))") }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        guard bytes.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
            throw SubprocessError("write \(path): \(Errno.name(errno))")
        }
        guard fchmod(fd, mode) == 0 else { throw SubprocessError("chmod \(path): \(Errno.name(errno))") }
    }
}

final class OtherUserTests: OtherUserTestCase {
    func testCreatedObjectsBelongToTheCaller() throws { try checkCreatedObjectsBelongToTheCaller() }
    func testChownToSupplementaryGroup() throws { try checkChownToSupplementaryGroup() }
    func testPermissionDenied() throws { try checkPermissionDenied() }
}

/// The same, with `allow_other` alone: the daemon must enforce permissions
/// itself by acting as the caller.
final class OtherUserWithoutDefaultPermissionsTests: OtherUserTestCase {
    override var mountOptions: [String] { ["allow_other"] }

    func testCreatedObjectsBelongToTheCaller() throws { try checkCreatedObjectsBelongToTheCaller() }
    func testChownToSupplementaryGroup() throws { try checkChownToSupplementaryGroup() }
    func testPermissionDenied() throws { try checkPermissionDenied() }
}

/// `user.purgefs.excluded_from_backup` is the file's owner's (as chmod is):
/// another user who may write a file's data may not set it, and may on a
/// file of their own. (`pinned`, by contrast, is whoever may write the path.)
final class ExcludedFromBackupOwnerTests: OtherUserTestCase {
    override var mountOptions: [String] { ["allow_other"] }

    func testOnlyTheOwnerSetsTheFlag() throws {
        let mnt = fixture.mountpoint
        try write(mnt + "/shared", "anyone may write\n", mode: 0o666)
        let refused = try runAs(mnt, ["setfattr", "-n", "user.purgefs.excluded_from_backup", "-v", "1", "shared"])
        XCTAssertNotEqual(refused.status, 0, "\(refused)")
        XCTAssertTrue(refused.stderr.contains("Operation not permitted"), "\(refused)")
        let pinned = try runAs(mnt, ["setfattr", "-n", "user.purgefs.pinned", "-v", "1", "shared"])
        XCTAssertEqual(pinned.status, 0, "pinned is the writers': \(pinned)")
        let own = try runAs(mnt, ["sh", "-c", "touch mine && setfattr -n user.purgefs.excluded_from_backup -v 1 mine && getfattr -n user.purgefs.excluded_from_backup --only-values mine"])
        XCTAssertEqual(own.status, 0, "\(own)")
        XCTAssertEqual(own.stdout, "1")
    }
}
