import Foundation
import Glibc
import XCTest

/// Clones on a backing filesystem without reflinks (an ext4 image made by
/// the test): `cp` inside the mount and `purgefs clone` share the whole
/// file until one of them is modified, which then gets a whole copy of its
/// own (SPEC, Clones: "whole-file copy on first modification is the
/// fallback elsewhere"). Every name stays an independent file to readers
/// and writers, through the mount and in the backing directory, across
/// remounts and `kill -9`; the accounting counts shared data once.
final class LinkedCloneTests: Ext4ImageTestCase {
    static let big = 64 << 20
    /// What a test writes into a file: one block, unlike any random data.
    static let block = [UInt8](repeating: 0xAB, count: 4096)

    override func prepareContainer() throws {
        try FileManager.default.createDirectory(atPath: container + "/caches", withIntermediateDirectories: true)
        try writeRandom(container + "/big", count: Self.big)
        XCTAssertEqual(chmod(container + "/big", 0o644), 0)
    }

    // MARK: Sharing

    func testCopySharesDataAndCountsItOnce() throws {
        let before = backingFree()
        run(["cp", m + "/big", m + "/copy"])
        let grown = Int64(before) - Int64(backingFree())
        XCTAssertLessThan(grown, 1 << 20, "cp of a 64 MiB file grew the backing filesystem by \(grown) bytes")
        XCTAssertTrue(sameContent(m + "/big", m + "/copy"))
        XCTAssertEqual(contentID("big").errorCode, 0)
        XCTAssertEqual(contentID("big"), contentID("copy"))
        XCTAssertEqual(numberAttr(m + "/copy", "shared"), UInt64(Self.big))
        XCTAssertEqual(numberAttr(m + "/big", "shared"), UInt64(Self.big))
        // Two files of their own, their data stored once.
        XCTAssertEqual(numberAttr(m, "size"), UInt64(2 * Self.big))
        XCTAssertEqual(numberAttr(m, "files"), 2)
        XCTAssertEqual(numberAttr(m, "clone_savings"), UInt64(Self.big))
        let allocated = try XCTUnwrap(numberAttr(m, "allocated"))
        XCTAssertTrue((UInt64(Self.big)..<UInt64(Self.big + (1 << 20))).contains(allocated), "root allocated \(allocated): the data once")
        assertAccounting("after cp")
    }

    // MARK: Independence

    func testClonesAreIndependentFiles() throws {
        XCTAssertEqual(setAttr(m + "/big", "user.origin", "original"), 0)
        run(["cp", m + "/big", m + "/clone"])
        let original = try contents("big")
        let a = try status(m + "/big"), b = try status(m + "/clone")
        XCTAssertNotEqual(a.st_ino, b.st_ino)
        XCTAssertEqual(a.st_nlink, 1)
        XCTAssertEqual(b.st_nlink, 1)

        // Modes are each file's own.
        XCTAssertEqual(chmod(m + "/clone", 0o600), 0)
        XCTAssertEqual(try status(m + "/big").st_mode & 0o7777, 0o644)
        XCTAssertEqual(chmod(m + "/big", 0o640), 0)
        XCTAssertEqual(try status(m + "/clone").st_mode & 0o7777, 0o600)

        // So are extended attributes; plain cp does not copy them.
        run(["setfattr", "-n", "user.x", "-v", "clone", m + "/clone"])
        XCTAssertEqual(getAttr(m + "/big", "user.x"), .failed(ENODATA))
        XCTAssertEqual(getAttr(m + "/clone", "user.origin"), .failed(ENODATA))
        XCTAssertEqual(getAttr(m + "/big", "user.origin"), .value("original"))
        XCTAssertEqual(getAttr(m + "/clone", "user.x"), .value("clone"))

        // A 4 KiB write into the clone changes only the clone.
        overwrite(m + "/clone", at: 8192, Self.block)
        assertReads("big", original, "after a write into the clone")
        let copy = try contents("clone")
        XCTAssertEqual(copy.count, original.count)
        XCTAssertEqual(copy, patched(original, at: 8192, Self.block), "the clone has the new bytes and the rest intact")
        XCTAssertNotEqual(contentID("big"), contentID("clone"))
        XCTAssertEqual(numberAttr(m + "/big", "shared"), 0)
        XCTAssertEqual(numberAttr(m + "/clone", "shared"), 0)
        XCTAssertEqual(numberAttr(m, "clone_savings"), 0)

        // Each keeps its own metadata through the copy the write made.
        XCTAssertEqual(try status(m + "/big").st_mode & 0o7777, 0o640)
        XCTAssertEqual(try status(m + "/clone").st_mode & 0o7777, 0o600)
        XCTAssertEqual(getAttr(m + "/clone", "user.x"), .value("clone"))
        XCTAssertEqual(getAttr(m + "/clone", "user.origin"), .failed(ENODATA))
        XCTAssertEqual(getAttr(m + "/big", "user.origin"), .value("original"))
        assertAccounting("after a write into the clone")
    }

    func testWritesToTheOriginalDoNotShowInTheClone() throws {
        run(["cp", m + "/big", m + "/clone"])
        let original = try contents("big")
        overwrite(m + "/big", at: 0, Self.block)
        assertReads("clone", original, "after a write to the original")
        assertReads("big", patched(original, at: 0, Self.block), "after a write to the original")
        XCTAssertNotEqual(contentID("big"), contentID("clone"))
        XCTAssertEqual(numberAttr(m + "/clone", "shared"), 0)
        assertAccounting("after a write to the original")
    }

    func testBothOpenAtOnce() throws {
        run(["cp", m + "/big", m + "/clone"])
        let original = try contents("big")
        // Every descriptor is opened while the two still share their data.
        let reader = open(m + "/big", O_RDONLY)
        let cloneReader = open(m + "/clone", O_RDONLY)
        let writer = open(m + "/clone", O_RDWR)
        defer { for fd in [reader, cloneReader, writer] where fd >= 0 { close(fd) } }
        XCTAssertGreaterThanOrEqual(reader, 0)
        XCTAssertGreaterThanOrEqual(cloneReader, 0)
        XCTAssertGreaterThanOrEqual(writer, 0, "open the clone O_RDWR: \(Errno.name(errno))")

        let bytes = [UInt8](repeating: 0x11, count: 100)
        XCTAssertEqual(bytes.withUnsafeBytes { pwrite(writer, $0.baseAddress, 100, 0) }, 100)
        XCTAssertEqual(ftruncate(writer, 4096), 0, "ftruncate the clone: \(Errno.name(errno))")
        let expected = patched(original.prefix(4096), at: 0, bytes)
        XCTAssertEqual(readAll(reader), original, "the original's reader still reads the original")
        XCTAssertEqual(readAll(cloneReader), expected, "the clone's other descriptor reads the clone as written: one file")
        XCTAssertEqual(readAll(writer), expected)

        for fd in [reader, cloneReader, writer] { close(fd) }
        assertReads("big", original, "after writing and truncating the open clone")
        assertReads("clone", expected, "after writing and truncating the open clone")
        assertAccounting("after writing and truncating the open clone")
    }

    func testTruncatingACloneLeavesTheOriginal() throws {
        run(["cp", m + "/big", m + "/clone"])
        let original = try contents("big")
        run(["truncate", "-s", "0", m + "/clone"])
        XCTAssertEqual(fileSize(m + "/clone"), 0)
        XCTAssertEqual(fileSize(container + "/clone"), 0)
        assertReads("big", original, "after truncating the clone")
        XCTAssertEqual(numberAttr(m + "/big", "shared"), 0)
        XCTAssertEqual(numberAttr(m, "clone_savings"), 0)
        assertAccounting("after truncating the clone")
    }

    func testUnlinkingTheOriginalLeavesTheClone() throws {
        run(["cp", m + "/big", m + "/clone"])
        let original = try contents("big")
        XCTAssertEqual(unlink(m + "/big"), 0)
        assertReads("clone", original, "after unlinking the original")
        XCTAssertEqual(numberAttr(m + "/clone", "shared"), 0)
        XCTAssertEqual(numberAttr(m, "clone_savings"), 0)
        XCTAssertEqual(numberAttr(m, "files"), 1)
        XCTAssertEqual(try status(m + "/clone").st_nlink, 1)
        assertAccounting("after unlinking the original")
    }

    func testARenamedCloneStaysIndependent() throws {
        run(["cp", m + "/big", m + "/clone"])
        let original = try contents("big")
        XCTAssertEqual(mkdir(m + "/moved", 0o755), 0)
        XCTAssertEqual(rename(m + "/clone", m + "/moved/clone"), 0)
        XCTAssertEqual(contentID("moved/clone"), contentID("big"), "a rename keeps the relationship")
        XCTAssertEqual(numberAttr(m + "/moved/clone", "shared"), UInt64(Self.big))
        overwrite(m + "/moved/clone", at: 4096, Self.block)
        assertReads("big", original, "after writing the renamed clone")
        assertReads("moved/clone", patched(original, at: 4096, Self.block), "after writing the renamed clone")
        XCTAssertFalse(exists(container + "/clone"))
        assertAccounting("after writing the renamed clone")
    }

    // MARK: Persistence

    func testRelationshipsSurviveRemount() throws {
        run(["cp", m + "/big", m + "/clone"])
        let original = try contents("big")
        let ids = [contentID("big"), contentID("clone")]
        let savings = numberAttr(m, "clone_savings")
        XCTAssertEqual(unmountPurgefs(), [])
        try mountPurgefs()
        XCTAssertEqual([contentID("big"), contentID("clone")], ids)
        XCTAssertEqual(ids[0], ids[1])
        XCTAssertEqual(numberAttr(m, "clone_savings"), savings)
        XCTAssertEqual(numberAttr(m, "clone_savings"), UInt64(Self.big))
        XCTAssertEqual(numberAttr(m + "/clone", "shared"), UInt64(Self.big))
        XCTAssertEqual(numberAttr(m, "files"), 2)
        XCTAssertEqual(try status(m + "/big").st_nlink, 1)
        XCTAssertEqual(try status(m + "/clone").st_nlink, 1)
        assertAccounting("after a remount")

        overwrite(m + "/clone", at: 0, Self.block)
        assertReads("big", original, "after a write into the clone after a remount")
        assertReads("clone", patched(original, at: 0, Self.block), "after a write into the clone after a remount")
        XCTAssertNotEqual(contentID("big"), contentID("clone"))
        assertAccounting("after a write into the clone after a remount")
    }

    func testRelationshipsSurviveKill9() throws {
        run(["cp", m + "/big", m + "/caches/copy"])
        run(["cp", m + "/big", m + "/third"])
        overwrite(m + "/third", at: 4096, Self.block)
        let original = try contents("big")
        let ids = ["big", "caches/copy", "third"].map(contentID)
        killPurgefs()
        try mountPurgefs()

        XCTAssertEqual(["big", "caches/copy", "third"].map(contentID), ids)
        XCTAssertEqual(ids[0], ids[1])
        XCTAssertNotEqual(ids[0], ids[2])
        XCTAssertEqual(numberAttr(m, "clone_savings"), UInt64(Self.big))
        assertReads("big", original, "after kill -9 and a remount")
        assertReads("caches/copy", original, "after kill -9 and a remount")
        assertReads("third", patched(original, at: 4096, Self.block), "after kill -9 and a remount")
        assertAccounting("after kill -9 and a remount")

        overwrite(m + "/caches/copy", at: 0, Self.block)
        assertReads("big", original, "after a write into the clone after kill -9")
        assertReads("caches/copy", patched(original, at: 0, Self.block), "after a write into the clone after kill -9")
        assertAccounting("after a write into the clone after kill -9")
    }

    func testBackingNamesReadTheirOwnContentWhenUnmounted() throws {
        for name in ["a", "b", "c", "d"] { run(["cp", m + "/big", m + "/" + name]) }
        let original = try contents("big")
        overwrite(m + "/a", at: 0, Self.block)
        overwrite(m + "/big", at: 8192, [UInt8](repeating: 0x5A, count: 4096))
        run(["truncate", "-s", "4096", m + "/c"])
        let names = ["big", "a", "b", "c", "d"]
        let expected = try names.map(contents)
        XCTAssertEqual(expected[2], original, "b was never written")
        XCTAssertEqual(expected[4], original, "d was never written")
        XCTAssertEqual(expected[3], original.prefix(4096))
        XCTAssertEqual(unmountPurgefs(), [])
        let backing = try FileManager.default.contentsOfDirectory(atPath: container).filter { $0 != ".purgefs" }
        XCTAssertEqual(Set(backing), Set(names + ["caches"]), "the backing directory holds the names, nothing else")
        for (name, content) in zip(names, expected) {
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: container + "/" + name)), content, "backing \(name) after unmount")
        }
    }

    // MARK: purgefs clone

    func testCloneCommand() throws {
        XCTAssertEqual(chmod(m + "/big", 0o640), 0)
        let before = backingFree()
        let made = try Subprocess.run([fixture.binary, "clone", m + "/big", m + "/caches/c"], timeout: 30)
        XCTAssertEqual(made.status, 0, "\(made)")
        let grown = Int64(before) - Int64(backingFree())
        XCTAssertLessThan(grown, 1 << 20, "purgefs clone of a 64 MiB file grew the backing filesystem by \(grown) bytes")
        XCTAssertTrue(sameContent(m + "/big", m + "/caches/c"))
        XCTAssertEqual(try status(m + "/caches/c").st_mode & 0o7777, 0o640)
        XCTAssertEqual(contentID("big"), contentID("caches/c"))
        XCTAssertEqual(numberAttr(m + "/caches/c", "shared"), UInt64(Self.big))
        assertAccounting("after purgefs clone")

        // DEST exists: a clone, or any other file.
        let again = try Subprocess.run([fixture.binary, "clone", m + "/big", m + "/caches/c"], timeout: 30)
        XCTAssertEqual(again.status, 1, "\(again)")
        XCTAssertTrue(again.stderr.contains("File exists"), again.stderr)
        XCTAssertEqual(writeBytes(m + "/other", [1, 2, 3]), 0)
        let onOther = try Subprocess.run([fixture.binary, "clone", m + "/big", m + "/other"], timeout: 30)
        XCTAssertEqual(onOther.status, 1, "\(onOther)")
        XCTAssertTrue(onOther.stderr.contains("File exists"), onOther.stderr)
        XCTAssertEqual(readBytes(m + "/other"), [1, 2, 3])
        XCTAssertTrue(sameContent(m + "/big", m + "/caches/c"))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: m + "/caches"), ["c"], "no temporary name is left")
    }

    // MARK: Space

    func testABreakPurgesFirstAndFailsWithENOSPCWhenNothingIsLeft() throws {
        try writeRandom(m + "/caches/junk", count: 72 << 20, seed: 9)
        run(["cp", m + "/big", m + "/clone"])
        XCTAssertEqual(unmountPurgefs(), [])
        // The monitor never purges (low=0): only writes do.
        try mountPurgefs(options: ["capacity=1T", "low=0", "high=0"])
        let used = try XCTUnwrap(numberAttr(m, "allocated"))
        XCTAssertEqual(setAttr(m, pf("capacity"), String(used + (1 << 20))), 0, "1 MiB free")
        let original = try contents("big")

        // Breaking the clone copies the whole 64 MiB file: it purges the 72 MiB cache first.
        overwrite(m + "/clone", at: 0, Self.block)
        XCTAssertFalse(exists(m + "/caches/junk"), "the write purged the cache first")
        XCTAssertTrue(readPurgeLog(container).contains { $0.reason == "write" && $0.path == "caches/junk" },
                      "purge log: \(readPurgeLog(container).map { "\($0.reason) \($0.path)" })")
        assertReads("big", original, "after a write that purged to break the clone")
        assertReads("clone", patched(original, at: 0, Self.block), "after a write that purged to break the clone")
        assertAccounting("after a write that purged to break the clone")

        // About 9 MiB left and nothing purgeable: breaking another clone does
        // not fit. ENOSPC (at the open for writing or at the write), and
        // neither file changes: the second clone still shares the original.
        run(["cp", m + "/big", m + "/second"])
        let ids = [contentID("big"), contentID("second")]
        XCTAssertEqual(ids[0], ids[1])
        XCTAssertEqual(tryOverwrite(m + "/second", at: 0, Self.block), ENOSPC)
        assertReads("big", original, "after ENOSPC")
        assertReads("second", original, "after ENOSPC")
        XCTAssertEqual([contentID("big"), contentID("second")], ids, "the clone that did not fit still shares")
        XCTAssertEqual(numberAttr(m + "/second", "shared"), UInt64(Self.big))
        assertAccounting("after ENOSPC")
    }

    /// SPEC: `purgeable` is "bytes that purging could free". Purging a clone
    /// that shares all its data with a file outside the zones frees nothing
    /// (the data stays the original's), so it adds 0; once written, a clone
    /// holds a whole copy of its own on ext4, and purging it frees that copy,
    /// no more.
    func testPurgingAClonefreesOnlyWhatItDidNotShare() throws {
        run(["cp", m + "/big", m + "/caches/a"])
        run(["cp", m + "/big", m + "/caches/b"])
        XCTAssertTrue(eventually { getAttr(m, pf("purgeable")) == .value("0") }, "purgeable: \(getAttr(m, pf("purgeable")))")
        XCTAssertEqual(getAttr(m + "/caches", pf("purgeable")), .value("0"))

        overwrite(m + "/caches/b", at: 0, Self.block)
        let own = try XCTUnwrap(numberAttr(m + "/caches/b", "allocated"))
        XCTAssertGreaterThanOrEqual(own, UInt64(Self.big), "b holds a whole copy of its own")
        XCTAssertTrue(eventually { getAttr(m, pf("purgeable")) == .value(String(own)) }, "purgeable: \(getAttr(m, pf("purgeable"))), b's own data \(own)")

        let original = try contents("big")
        let purgedBefore = try XCTUnwrap(numberAttr(m, "purged_bytes"))
        XCTAssertEqual(setAttr(m, pf("purge"), "all"), 0)
        XCTAssertFalse(exists(m + "/caches/a"), "purge all takes every candidate")
        XCTAssertFalse(exists(m + "/caches/b"), "purge all takes every candidate")
        XCTAssertEqual(try XCTUnwrap(numberAttr(m, "purged_bytes")) - purgedBefore, own, "purging frees only b's own copy")
        let log = readPurgeLog(container)
        XCTAssertEqual(log.first { $0.path == "caches/a" }?.bytes, 0, "a shared everything: purging it freed nothing")
        XCTAssertEqual(log.first { $0.path == "caches/b" }?.bytes, own)
        assertReads("big", original, "after purging its clones")
        XCTAssertEqual(numberAttr(m + "/big", "shared"), 0)
        XCTAssertEqual(numberAttr(m, "clone_savings"), 0)
        assertAccounting("after purging the clones")
    }
}
