import Foundation
import Glibc
import XCTest

/// Clones on the reflink backend (an XFS image made by the test): `cp`
/// inside the mount shares data, each clone stays an independent file, and
/// the accounting counts shared data once, across a remount too.
final class CloneTests: ReflinkTestCase {
    static let big = 64 << 20

    override func prepareContainer() throws {
        try FileManager.default.createDirectory(atPath: container + "/caches", withIntermediateDirectories: true)
        try writeRandom(container + "/big", count: Self.big)
    }

    func testCopyIsAClone() throws {
        let before = backingFree()
        run(["cp", m + "/big", m + "/caches/copy"])
        let after = backingFree()
        XCTAssertLessThan(Int64(before) - Int64(after), 1 << 20, "cp of a 64 MiB file grew the backing filesystem by \(Int64(before) - Int64(after)) bytes")
        XCTAssertTrue(sameContent(m + "/big", m + "/caches/copy"))
        XCTAssertEqual(getAttr(m + "/big", pf("content_id")), getAttr(m + "/caches/copy", pf("content_id")))
        XCTAssertEqual(numberAttr(m + "/caches/copy", "shared"), UInt64(Self.big))
        XCTAssertEqual(numberAttr(m, "size"), UInt64(2 * Self.big))
        XCTAssertEqual(numberAttr(m, "clone_savings"), UInt64(Self.big))
        assertAccounting("after cp")

        // A 4 KiB write into the clone costs little, and only the clone changes.
        let original = try Data(contentsOf: URL(fileURLWithPath: m + "/big"))
        let beforeWrite = backingFree()
        overwrite(m + "/caches/copy", at: 8192, [UInt8](repeating: 0xAB, count: 4096))
        let afterWrite = backingFree()
        XCTAssertLessThan(Int64(beforeWrite) - Int64(afterWrite), 1 << 20, "a 4 KiB write into the clone cost \(Int64(beforeWrite) - Int64(afterWrite)) bytes")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: m + "/big")), original)
        let copy = try Data(contentsOf: URL(fileURLWithPath: m + "/caches/copy"))
        XCTAssertEqual(copy[8192..<12288], Data(repeating: 0xAB, count: 4096))
        XCTAssertEqual(copy[12288...], original[12288...])
        XCTAssertNotEqual(getAttr(m + "/big", pf("content_id")), getAttr(m + "/caches/copy", pf("content_id")))
        XCTAssertEqual(numberAttr(m + "/caches/copy", "shared"), UInt64(Self.big - 4096))
        assertAccounting("after a 4 KiB write into the clone")

        // The clone's own data is what purging it frees.
        XCTAssertEqual(numberAttr(m + "/caches/copy", "allocated"), 4096)
        XCTAssertTrue(eventually { getAttr(m, pf("purgeable")) == .value("4096") }, "purgeable: \(getAttr(m, pf("purgeable")))")

        // Relationships survive a remount.
        let figures = ["allocated", "clone_savings"].map { numberAttr(m, $0) }
        let ids = [getAttr(m + "/big", pf("content_id")), getAttr(m + "/caches/copy", pf("content_id"))]
        XCTAssertEqual(unmountPurgefs(), [])
        try mountPurgefs()
        XCTAssertEqual(["allocated", "clone_savings"].map { numberAttr(m, $0) }, figures)
        XCTAssertEqual([getAttr(m + "/big", pf("content_id")), getAttr(m + "/caches/copy", pf("content_id"))], ids)
        XCTAssertEqual(numberAttr(m + "/big", "shared"), UInt64(Self.big - 4096))
        assertAccounting("after a remount")

        // Unlinking the original leaves the clone whole and alone.
        XCTAssertEqual(unlink(m + "/big"), 0)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: m + "/caches/copy")), copy)
        XCTAssertEqual(numberAttr(m + "/caches/copy", "shared"), 0)
        XCTAssertEqual(numberAttr(m, "clone_savings"), 0)
        assertAccounting("after unlinking the original")
    }

    func testClonesAreIndependentFiles() throws {
        run(["cp", m + "/big", m + "/clone"])
        let original = try Data(contentsOf: URL(fileURLWithPath: m + "/big"))
        var a = stat(), b = stat()
        XCTAssertEqual(stat(m + "/big", &a), 0)
        XCTAssertEqual(stat(m + "/clone", &b), 0)
        XCTAssertNotEqual(a.st_ino, b.st_ino)
        XCTAssertEqual(b.st_nlink, 1)

        // Both open at once: writes and a truncate through the clone never show in the original.
        let reader = open(m + "/big", O_RDONLY)
        let writer = open(m + "/clone", O_RDWR)
        XCTAssertGreaterThanOrEqual(reader, 0)
        XCTAssertGreaterThanOrEqual(writer, 0)
        let bytes = [UInt8](repeating: 0x11, count: 100)
        XCTAssertEqual(bytes.withUnsafeBytes { pwrite(writer, $0.baseAddress, 100, 0) }, 100)
        var head = [UInt8](repeating: 0, count: 100)
        XCTAssertEqual(head.withUnsafeMutableBytes { pread(reader, $0.baseAddress, 100, 0) }, 100)
        XCTAssertEqual(Data(head), original[0..<100])
        XCTAssertEqual(ftruncate(writer, 4096), 0)
        close(writer)
        close(reader)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: m + "/big")), original)
        var expected = original[0..<4096]
        expected.replaceSubrange(0..<100, with: bytes)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: m + "/clone")), expected)
        assertAccounting("after writing and truncating the clone")

        // chmod and rename of one leave the other alone; writes to the original leave the clone alone.
        run(["cp", m + "/big", m + "/clone2"])
        XCTAssertEqual(chmod(m + "/clone2", 0o600), 0)
        XCTAssertEqual(stat(m + "/big", &a), 0)
        XCTAssertEqual(a.st_mode & 0o777, 0o644)
        XCTAssertEqual(setAttr(m + "/clone2", "user.note", "mine"), 0)
        XCTAssertEqual(getAttr(m + "/big", "user.note"), .failed(ENODATA))
        XCTAssertEqual(chown(m + "/clone2", 1234, 1234), 0)
        XCTAssertEqual(stat(m + "/big", &a), 0)
        XCTAssertEqual(a.st_uid, 0)
        XCTAssertEqual(rename(m + "/clone2", m + "/caches/moved"), 0)
        overwrite(m + "/big", at: 0, [UInt8](repeating: 0x22, count: 4096))
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: m + "/caches/moved")), original)
        XCTAssertEqual(getAttr(m + "/caches/moved", pf("content_id")).errorCode, 0)
        XCTAssertNotEqual(getAttr(m + "/big", pf("content_id")), getAttr(m + "/caches/moved", pf("content_id")))
        assertAccounting("after chmod, rename and a write to the original")
        XCTAssertEqual(unlink(m + "/caches/moved"), 0)
        assertAccounting("after unlinking a clone")
    }

    func testPartialCopyIsAnOrdinaryCopy() throws {
        let source = open(m + "/big", O_RDONLY)
        let destination = open(m + "/part", O_WRONLY | O_CREAT | O_EXCL, 0o644)
        defer { close(source); close(destination) }
        var inOffset: Int64 = 4096, outOffset: Int64 = 0
        XCTAssertEqual(clinuxCopy(source, &inOffset, destination, &outOffset, 1 << 20), 1 << 20)
        XCTAssertEqual(numberAttr(m + "/part", "shared"), 0)
        XCTAssertEqual(numberAttr(m, "clone_savings"), 0)
        XCTAssertNotEqual(getAttr(m + "/big", pf("content_id")), getAttr(m + "/part", pf("content_id")))
    }

    func testPurgingAClonefreesOnlyWhatItDidNotShare() throws {
        run(["cp", m + "/big", m + "/caches/copy"])
        overwrite(m + "/caches/copy", at: 0, [UInt8](repeating: 0x33, count: 4096))
        XCTAssertTrue(eventually { getAttr(m, pf("purgeable")) == .value("4096") }, "purgeable: \(getAttr(m, pf("purgeable")))")
        let before = numberAttr(m, "purged_bytes") ?? 0
        XCTAssertEqual(setAttr(m, pf("purge"), "all"), 0)
        // Gone from the backing store at once; from the mount once the kernel
        // has the daemon's notice, which is sent asynchronously.
        XCTAssertFalse(FileManager.default.fileExists(atPath: container + "/caches/copy"))
        XCTAssertTrue(eventually { !FileManager.default.fileExists(atPath: m + "/caches/copy") })
        XCTAssertEqual((numberAttr(m, "purged_bytes") ?? 0) - before, 4096, "purging the clone frees only its own block")
        XCTAssertEqual(numberAttr(m + "/big", "shared"), 0)
        XCTAssertEqual(numberAttr(m, "clone_savings"), 0)
        assertAccounting("after purging the clone")
    }

    /// The original in a zone, its clone outside every zone: purging the
    /// original frees none of the shared blocks (the clone keeps them), so
    /// they are charged to the clone and the original is purgeable for nothing.
    func testPurgingAnOriginalWhoseCloneLivesOnFreesNothing() throws {
        try writeRandom(m + "/caches/original", count: 8 << 20, seed: 5)
        let original = try Data(contentsOf: URL(fileURLWithPath: m + "/caches/original"))
        run(["cp", m + "/caches/original", m + "/kept"])
        XCTAssertTrue(eventually { getAttr(m, pf("purgeable")) == .value("0") }, "purgeable: \(getAttr(m, pf("purgeable")))")
        XCTAssertEqual(numberAttr(m + "/caches/original", "allocated"), 0)
        let before = numberAttr(m, "purged_bytes") ?? 0
        XCTAssertEqual(setAttr(m, pf("purge"), "all"), 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: container + "/caches/original"))
        XCTAssertEqual((numberAttr(m, "purged_bytes") ?? 0) - before, 0, "the purge freed nothing")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: m + "/kept")), original)
        XCTAssertEqual(numberAttr(m + "/kept", "shared"), 0)
        assertAccounting("after purging an original whose clone lives on")
    }

    func testRelationshipsSurviveKill9() throws {
        run(["cp", m + "/big", m + "/caches/copy"])
        run(["cp", m + "/big", m + "/third"])
        overwrite(m + "/third", at: 4096, [UInt8](repeating: 0x44, count: 4096))
        let ids = ["big", "caches/copy", "third"].map { getAttr(m + "/" + $0, pf("content_id")) }
        let third = try Data(contentsOf: URL(fileURLWithPath: m + "/third"))
        let daemons = fixture.ownProcesses()
        XCTAssertFalse(daemons.isEmpty)
        for pid in daemons { kill(pid, SIGKILL) }
        XCTAssertEqual(unmountPurgefs(), [])
        try mountPurgefs()
        XCTAssertEqual(["big", "caches/copy", "third"].map { getAttr(m + "/" + $0, pf("content_id")) }, ids)
        XCTAssertEqual(ids[0], ids[1])
        XCTAssertNotEqual(ids[0], ids[2])
        XCTAssertTrue(sameContent(m + "/big", m + "/caches/copy"))
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: m + "/third")), third)
        assertAccounting("after kill -9 and a remount")
    }

    func testAWriteThatBreaksAClonePurgesFirst() throws {
        try writeRandom(m + "/caches/junk", count: 8 << 20, seed: 9)
        run(["cp", m + "/big", m + "/clone"])
        XCTAssertEqual(unmountPurgefs(), [])
        // The monitor never purges (low=0): only writes do.
        try mountPurgefs(options: ["capacity=1T", "low=0", "high=0"])
        let used = try XCTUnwrap(numberAttr(m, "allocated"))
        XCTAssertEqual(setAttr(m, pf("capacity"), String(used + (1 << 20))), 0, "1 MiB free")
        let original = try Data(contentsOf: URL(fileURLWithPath: m + "/big"))
        overwrite(m + "/clone", at: 0, [UInt8](repeating: 0x55, count: 2 << 20))
        XCTAssertFalse(FileManager.default.fileExists(atPath: container + "/caches/junk"), "the write purged the cache first")
        XCTAssertTrue(eventually { !FileManager.default.fileExists(atPath: m + "/caches/junk") }, "and the mount no longer shows it")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: m + "/big")), original)
        let log = try String(contentsOfFile: container + "/.purgefs/purge.log", encoding: .utf8)
        XCTAssertTrue(log.contains("\"write\""), log)
        assertAccounting("after a write that broke the clone")

        // Nothing purgeable left: a write that does not fit stops with ENOSPC; the original keeps its data.
        let fd = open(m + "/clone", O_WRONLY)
        defer { close(fd) }
        let bytes = [UInt8](repeating: 0x66, count: 48 << 20)
        let written = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, bytes.count, 4 << 20) }
        XCTAssertLessThan(written, bytes.count, "the write did not fit")
        let again = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, 1 << 20, 60 << 20) }
        XCTAssertEqual(again, -1)
        XCTAssertEqual(errno, ENOSPC)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: m + "/big")), original)
        assertAccounting("after ENOSPC")
    }
}
