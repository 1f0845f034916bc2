import Foundation
import Glibc
import PurgeCore
import PurgeSys
import XCTest

/// `user.purgefs.flat`, `purgefs flatten` and `purgefs unmount --flatten`
/// on the test's own filesystem (/tmp: ext4, no reflinks), where a clone is
/// a hard link of its original's backing inode until one is written. Once
/// flattened, each name is a plain file of its own in the backing
/// directory: writing one there leaves the other as it was.
final class FlattenTests: MountedTestCase {
    static let size = 4 << 20
    /// A simulated device: `space --available` then holds whatever else
    /// writes to or frees the real filesystem meanwhile.
    override var mountOptions: [String] { ["capacity=256M"] }
    var m: String { fixture.mountpoint }
    var container: String { fixture.container }
    var original = Data()

    override func prepareContainer() throws {
        try FileManager.default.createDirectory(atPath: container + "/caches", withIntermediateDirectories: true)
        var state: UInt64 = 7
        original = Data((0..<Self.size).map { _ in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return UInt8(truncatingIfNeeded: state >> 33)
        })
        try original.write(to: URL(fileURLWithPath: container + "/big"))
    }

    private func purgefs(_ arguments: [String]) throws -> CommandResult {
        try Subprocess.run([fixture.binary] + arguments, timeout: 60)
    }

    private func cp(_ source: String, _ destination: String) throws {
        let result = try Subprocess.run(["cp", source, destination], timeout: 60)
        XCTAssertEqual(result.status, 0, "\(result)")
    }

    private func flat(_ path: String, file: StaticString = #filePath, line: UInt = #line) -> UInt64? {
        numberAttr(path, "flat", file: file, line: line)
    }

    private func backingInode(_ relative: String) throws -> stat {
        var status = stat()
        guard lstat(container + "/" + relative, &status) == 0 else { throw SubprocessError("lstat \(relative): \(Errno.name(errno))") }
        return status
    }

    private func assertContents(_ path: String, _ expected: Data, _ label: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(FileManager.default.contents(atPath: path), expected, "\(label): \(path)", file: file, line: line)
    }

    /// Every regular file of the backing container has one name and one link.
    private func assertNoSharedInodes(_ label: String, file: StaticString = #filePath, line: UInt = #line) {
        for (inode, entry) in BackingWalk(container).files {
            XCTAssertEqual(entry.names.count, 1, "\(label): inode \(inode) has names \(entry.names)", file: file, line: line)
            var status = stat()
            XCTAssertEqual(lstat(container + "/" + entry.names[0], &status), 0, file: file, line: line)
            XCTAssertEqual(status.st_nlink, 1, "\(label): \(entry.names[0]) has \(status.st_nlink) links", file: file, line: line)
        }
    }

    func testCopySharesUntilFlattenMakesBothPlainFiles() throws {
        XCTAssertEqual(flat(m + "/big"), 1, "a file never cloned is flat")
        try cp(m + "/big", m + "/copy")
        XCTAssertEqual(flat(m + "/copy"), 0, "the copy shares the original's backing inode")
        XCTAssertEqual(flat(m + "/big"), 0, "and so does the original")
        XCTAssertEqual(numberAttr(m, "not_flat"), 2)
        XCTAssertEqual(try backingInode("big").st_ino, try backingInode("copy").st_ino, "hard links in the backing directory")
        let usage = try purgefs(["usage", m])
        XCTAssertEqual(usage.status, 0, "\(usage)")
        XCTAssertTrue(usage.stdout.contains("Not flat") && usage.stdout.contains("2 files"), usage.stdout)

        let flattened = try purgefs(["flatten", m])
        XCTAssertEqual(flattened.status, 0, "\(flattened)")
        XCTAssertTrue(flattened.stdout.contains("Flattened 1 file"), flattened.stdout)
        XCTAssertTrue(flattened.stdout.contains("every file under \(m) is flat"), flattened.stdout)
        XCTAssertEqual(flat(m + "/copy"), 1)
        XCTAssertEqual(flat(m + "/big"), 1)
        XCTAssertEqual(numberAttr(m, "not_flat"), 0)
        XCTAssertEqual(numberAttr(m, "clone_savings"), 0, "nothing is shared any more")
        XCTAssertGreaterThanOrEqual(numberAttr(m, "allocated") ?? 0, UInt64(2 * Self.size), "two copies are charged")
        XCTAssertFalse(try purgefs(["usage", m]).stdout.contains("Not flat"))
        assertContents(m + "/big", original, "after flatten")
        assertContents(m + "/copy", original, "after flatten")
        XCTAssertNotEqual(try backingInode("big").st_ino, try backingInode("copy").st_ino, "two inodes in the backing directory")
        assertNoSharedInodes("after flatten")

        let again = try purgefs(["flatten", m])
        XCTAssertEqual(again.status, 0, "\(again)")
        XCTAssertTrue(again.stdout.contains("Nothing to flatten"), again.stdout)

        // Written in the backing directory, as once the container has left purgefs.
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: container + "/copy"))
        try handle.write(contentsOf: Data(repeating: 0xAB, count: 4096))
        try handle.close()
        assertContents(container + "/big", original, "the original after a write into the copy's backing file")
        XCTAssertEqual(unmountPurgefs(), [])
        assertContents(container + "/big", original, "unmounted")
    }

    func testFlattenOfOnePathFlattensOnlyIt() throws {
        try cp(m + "/big", m + "/a")
        try cp(m + "/big", m + "/caches/b")
        XCTAssertEqual([flat(m + "/big"), flat(m + "/a"), flat(m + "/caches/b")], [0, 0, 0])
        XCTAssertEqual(numberAttr(m, "not_flat"), 3)

        let file = try purgefs(["flatten", m, m + "/caches/b"])
        XCTAssertEqual(file.status, 0, "\(file)")
        XCTAssertEqual(flat(m + "/caches/b"), 1)
        XCTAssertEqual([flat(m + "/big"), flat(m + "/a")], [0, 0], "the files outside PATH still share")
        XCTAssertEqual(numberAttr(m, "not_flat"), 2)
        XCTAssertEqual(try backingInode("big").st_ino, try backingInode("a").st_ino)
        XCTAssertNotEqual(try backingInode("big").st_ino, try backingInode("caches/b").st_ino)

        // A directory as PATH: the files in it only.
        try cp(m + "/big", m + "/caches/c")
        let directory = try purgefs(["flatten", m, m + "/caches"])
        XCTAssertEqual(directory.status, 0, "\(directory)")
        XCTAssertEqual(flat(m + "/caches/c"), 1)
        XCTAssertEqual([flat(m + "/big"), flat(m + "/a")], [0, 0])
        for name in ["big", "a", "caches/b", "caches/c"] { assertContents(m + "/" + name, original, "after flattening caches") }
    }

    /// The original's flatten is its break: it keeps its inode, its two
    /// clones move onto a copy, which they still share with each other.
    func testFlatteningTheOriginalLeavesItsClonesSharingACopy() throws {
        try cp(m + "/big", m + "/a")
        try cp(m + "/big", m + "/caches/b")
        let before = try backingInode("big").st_ino
        let result = try purgefs(["flatten", m, m + "/big"])
        XCTAssertEqual(result.status, 0, "\(result)")
        XCTAssertEqual(flat(m + "/big"), 1)
        XCTAssertEqual([flat(m + "/a"), flat(m + "/caches/b")], [0, 0], "the clones share the copy")
        XCTAssertEqual(try backingInode("big").st_ino, before, "the original keeps its backing inode")
        XCTAssertEqual(try backingInode("big").st_nlink, 1)
        XCTAssertEqual(try backingInode("a").st_ino, try backingInode("caches/b").st_ino)
        XCTAssertNotEqual(try backingInode("a").st_ino, before)
        for name in ["big", "a", "caches/b"] { assertContents(m + "/" + name, original, "after flattening the original") }

        let rest = try purgefs(["flatten", m])
        XCTAssertEqual(rest.status, 0, "\(rest)")
        XCTAssertEqual([flat(m + "/a"), flat(m + "/caches/b")], [1, 1])
        assertNoSharedInodes("after flattening the rest")
        for name in ["big", "a", "caches/b"] { assertContents(m + "/" + name, original, "after flattening the rest") }
    }

    func testUnmountFlattenLeavesNoSharedInodes() throws {
        try cp(m + "/big", m + "/copy")
        try cp(m + "/big", m + "/caches/copy")
        XCTAssertEqual(numberAttr(m, "not_flat"), 3)
        let unmounted = try purgefs(["unmount", "--flatten", m])
        XCTAssertEqual(unmounted.status, 0, "\(unmounted)")
        XCTAssertFalse(MountTable.isMounted(m), "unmounted")
        assertNoSharedInodes("after unmount --flatten")
        for name in ["big", "copy", "caches/copy"] { assertContents(container + "/" + name, original, "unmounted") }
    }

    func testNoRoomForTheCopyLosesNothing() throws {
        try cp(m + "/big", m + "/copy")
        let squeezed = try purgefs(["space", m, "--available", "1M"])
        XCTAssertEqual(squeezed.status, 0, "\(squeezed)")
        let refused = try purgefs(["flatten", m, m + "/copy"])
        XCTAssertEqual(refused.status, 1, "\(refused)")
        XCTAssertTrue(refused.stderr.contains("cannot flatten \(m)/copy") && refused.stderr.contains("No space left on device"),
                      refused.stderr)
        XCTAssertEqual(refused.stderr.split(separator: "\n").count, 1, refused.stderr)
        XCTAssertEqual([flat(m + "/big"), flat(m + "/copy")], [0, 0], "still sharing")
        assertContents(m + "/copy", original, "after the refused flatten")
        assertContents(m + "/big", original, "after the refused flatten")
    }

    func testFlatAttributeAndBadInput() throws {
        XCTAssertEqual(getAttr(m + "/caches", pf("flat")).errorCode, ENODATA, "files only")
        XCTAssertEqual(setAttr(m + "/big", pf("flat"), "0"), EINVAL, "read-only")
        XCTAssertEqual(setAttr(m + "/big", pf("flatten"), "2"), EINVAL, "flatten takes 1")
        XCTAssertEqual(setAttr(m + "/caches", pf("flatten"), "1"), EINVAL, "files only")
        XCTAssertEqual(getAttr(m + "/caches", pf("not_flat")).errorCode, ENODATA, "the root only")

        let missing = try purgefs(["flatten"])
        XCTAssertEqual(missing.status, 64, "\(missing)")
        XCTAssertTrue(missing.stderr.contains("flatten: MOUNTPOINT is missing"), missing.stderr)
        let extra = try purgefs(["flatten", m, m + "/big", m + "/caches"])
        XCTAssertEqual(extra.status, 64, "\(extra)")
        let gone = try purgefs(["flatten", m, m + "/nothing"])
        XCTAssertEqual(gone.status, 1, "\(gone)")
        XCTAssertTrue(gone.stderr.contains("No such file or directory"), gone.stderr)
        let outside = try purgefs(["flatten", m, fixture.native])
        XCTAssertEqual(outside.status, 1, "\(outside)")
        XCTAssertTrue(outside.stderr.contains("is not inside the purgefs mount at \(m)"), outside.stderr)
        let notMount = try purgefs(["flatten", fixture.native])
        XCTAssertEqual(notMount.status, 1, "\(notMount)")
        XCTAssertTrue(notMount.stderr.contains("is not a purgefs mount"), notMount.stderr)
    }

    private func unmountPurgefs() -> [String] { fixture.unmount() }
}
