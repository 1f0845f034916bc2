import Foundation
import Glibc
import XCTest

/// `pinned`, `group` and `tombstone`, and recency across a remount, are
/// kept by the backing inode's identity (device, inode number). ext4 gives a
/// new file or directory the number of one just deleted, so they must stay
/// with the inode they belong to: an entry deleted behind the mount or while
/// unmounted and replaced by a new one with its number passes nothing on.
/// On a fresh ext4 image of its own, where that reuse is certain.
final class InodeReuseTests: MountedTestCase {
    override var mountsInSetUp: Bool { false }
    override var containerOnFreshExt4: Bool { true }

    private func replace(_ old: String, with new: String, directory: Bool,
                         file: StaticString = #filePath, line: UInt = #line) {
        replaceReusingInode(fixture.container, old, with: new, directory: directory, file: file, line: line)
    }

    /// Mounts, and makes `caches/a` through the mount, pinned.
    private func mountWithPinnedFile() throws {
        let m = fixture.mountpoint
        try fixture.mount()
        try FileManager.default.createDirectory(atPath: m + "/caches", withIntermediateDirectories: true)
        XCTAssertEqual(writeBytes(m + "/caches/a", tiled(10_000, seed: 40)), 0)
        XCTAssertEqual(setAttr(m + "/caches/a", pf("pinned"), "1"), 0)
        XCTAssertEqual(getAttr(m + "/caches/a", pf("pinned")), .value("1"))
    }

    private func assertUnpinnedAndPurged(_ path: String, file: StaticString = #filePath, line: UInt = #line) {
        let m = fixture.mountpoint
        XCTAssertEqual(getAttr(m + "/" + path, pf("pinned")), .value("0"), "the new file is not pinned", file: file, line: line)
        XCTAssertEqual(setAttr(m, pf("purge"), "all"), 0, file: file, line: line)
        XCTAssertFalse(exists(fixture.container + "/" + path), "and so it is purged", file: file, line: line)
    }

    func testAPinDoesNotPassToAFileMadeWithItsNumberWhileUnmounted() throws {
        try mountWithPinnedFile()
        XCTAssertEqual(fixture.unmount(), [])

        replace("caches/a", with: "caches/b", directory: false)
        try fixture.mount()
        assertUnpinnedAndPurged("caches/b")
    }

    func testATombstoneDoesNotPassToADirectoryMadeWithItsNumberWhileUnmounted() throws {
        let m = fixture.mountpoint
        try fixture.mount()
        try FileManager.default.createDirectory(atPath: m + "/caches/old", withIntermediateDirectories: true)
        XCTAssertEqual(setAttr(m + "/caches/old", pf("tombstone"), "1"), 0)
        XCTAssertEqual(setAttr(m + "/caches/old", pf("group"), "1"), 0)
        XCTAssertEqual(fixture.unmount(), [])

        replace("caches/old", with: "caches/new", directory: true)
        try fixture.mount()
        XCTAssertEqual(getAttr(m + "/caches/new", pf("tombstone")), .value("0"), "the new directory keeps no tombstone")
        XCTAssertEqual(getAttr(m + "/caches/new", pf("group")), .value("0"), "nor a group")
    }

    /// The same behind a live mount: the pinned file is deleted and a new
    /// one takes its number within one batch of the tracker's.
    func testAPinDoesNotPassToAFileMadeWithItsNumberBehindTheMount() throws {
        let m = fixture.mountpoint
        try mountWithPinnedFile()
        // The daemon holds the looked-up file until the kernel forgets it;
        // only then does deleting it free its number.
        let pid = try XCTUnwrap(fixture.daemonPID)
        XCTAssertTrue(eventually(timeout: 20) {
            _ = try? "2".write(toFile: "/proc/sys/vm/drop_caches", atomically: false, encoding: .utf8)
            return !openDescriptors(of: pid).contains { $0.target == fixture.container + "/caches/a" }
        }, "the daemon let go of caches/a")

        replace("caches/a", with: "caches/b", directory: false)
        XCTAssertTrue(eventually(timeout: 10) { getAttr(m + "/caches", pf("size")) == .value("20000") },
                      "the tracker saw caches/b; caches size \(getAttr(m + "/caches", pf("size")))")
        assertUnpinnedAndPurged("caches/b")
    }

    /// A clone's identity is its anchor's, not the inode its name holds: a
    /// pinned clone that breaks away (its name then holds another inode)
    /// keeps its pin across a remount.
    func testAPinnedCloneKeepsItsPinWhenItBreaksAway() throws {
        let m = fixture.mountpoint
        try mountWithPinnedFile()
        let copy = try Subprocess.run(["cp", m + "/caches/a", m + "/caches/copy"], timeout: 30)
        XCTAssertEqual(copy.status, 0, "\(copy)")
        XCTAssertEqual(getAttr(m + "/caches/copy", pf("content_id")), getAttr(m + "/caches/a", pf("content_id")), "a clone")
        XCTAssertEqual(setAttr(m + "/caches/copy", pf("pinned"), "1"), 0)
        try assertPinSurvivesAWriteAndARemount("caches/copy")  // the write breaks it away
    }

    /// The same for the original a clone was made from: modified, it gets
    /// data of its own, and keeps its pin across a remount.
    func testAPinnedOriginalKeepsItsPinWhenItIsModifiedAfterACopy() throws {
        let m = fixture.mountpoint
        try mountWithPinnedFile()
        let copy = try Subprocess.run(["cp", m + "/caches/a", m + "/caches/copy"], timeout: 30)
        XCTAssertEqual(copy.status, 0, "\(copy)")
        try assertPinSurvivesAWriteAndARemount("caches/a")
    }

    /// Writes into the pinned `path`, remounts, and checks it is still
    /// pinned and survives `purge all`.
    private func assertPinSurvivesAWriteAndARemount(_ path: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let m = fixture.mountpoint
        let fd = open(m + "/" + path, O_WRONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(fd, 0, file: file, line: line)
        XCTAssertEqual(pwrite(fd, "changed", 7, 0), 7, file: file, line: line)
        close(fd)
        XCTAssertEqual(fixture.unmount(), [], file: file, line: line)

        try fixture.mount()
        XCTAssertEqual(getAttr(m + "/" + path, pf("pinned")), .value("1"), "\(path) is still pinned", file: file, line: line)
        XCTAssertEqual(setAttr(m, pf("purge"), "all"), 0, file: file, line: line)
        XCTAssertTrue(exists(fixture.container + "/" + path), "and so it is not purged", file: file, line: line)
    }

    /// A new file with a deleted one's number is not aged by the deleted
    /// file's last use: the monitor takes the file really used least recently.
    func testANewFileWithADeletedOnesNumberIsNotAgedByItsRecord() throws {
        let m = fixture.mountpoint
        try fixture.mount()
        try FileManager.default.createDirectory(atPath: m + "/caches", withIntermediateDirectories: true)
        XCTAssertEqual(writeBytes(m + "/caches/a", tiled(10_000, seed: 42)), 0)
        XCTAssertEqual(writeBytes(m + "/caches/z", tiled(10_000, seed: 43)), 0)  // used after a
        XCTAssertEqual(fixture.unmount(), [])

        replace("caches/a", with: "caches/b", directory: false)  // made now, after z's last use
        try fixture.mount()
        XCTAssertEqual(setAttr(m, pf("purge"), "10000"), 0)
        XCTAssertFalse(exists(fixture.container + "/caches/z"), "z, used least recently, is purged")
        XCTAssertTrue(exists(fixture.container + "/caches/b"), "b, made after it, is not")
    }
}
