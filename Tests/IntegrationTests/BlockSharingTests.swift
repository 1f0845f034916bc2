internal import CLinux
import Foundation
import Glibc
import XCTest

/// Linked clones that share blocks (docs/DESIGN.md, "Block sharing without
/// reflinks"), on an ext4 image: a first write into a clone copies the 64
/// KiB blocks it touches, not the file; every member reads what was
/// written into it, through writes, truncates, remounts and `kill -9`; the
/// mount's check (`block-share-check` in the state directory, written after
/// replay) finds nothing. Only through the mount: in the backing directory
/// a sparse clone's shared blocks are holes.
final class BlockSharingTests: Ext4ImageTestCase {
    override var imageSize: Int { 1 << 30 }
    static let big = 256 << 20
    static let small = 8 << 20
    static let blockSize = 64 << 10

    var stateDirectory: String { container + "/.purgefs" }

    override func setUpWithError() throws {
        // The daemon inherits it: block sharing is made only with it.
        // Put back as it was: the clone test classes run with it set for the whole run too.
        let before = getenv("PURGEFS_BLOCK_SHARING").map { String(cString: $0) }
        setenv("PURGEFS_BLOCK_SHARING", "1", 1)
        addTeardownBlock {
            if let before { setenv("PURGEFS_BLOCK_SHARING", before, 1) } else { unsetenv("PURGEFS_BLOCK_SHARING") }
        }
        try super.setUpWithError()
    }

    override func prepareContainer() throws {
        try FileManager.default.createDirectory(atPath: container + "/caches", withIntermediateDirectories: true)
        try writeRandom(container + "/big", count: Self.big, seed: 5)
        try writeRandom(container + "/small", count: Self.small + 1000, seed: 6)
    }

    // MARK: Helpers

    /// Asserts `name` reads `expected` through the mount.
    func assertMountReads(_ name: String, _ expected: Data, _ label: String, file: StaticString = #filePath, line: UInt = #line) {
        guard let read = compareFile(m + "/" + name, with: expected) else {
            return XCTFail("\(label): cannot read \(name)", file: file, line: line)
        }
        if let difference = read.firstDifference {
            XCTFail("\(label): \(name) reads \(read.count) bytes, not the \(expected.count) expected (first difference at \(difference))",
                    file: file, line: line)
        }
    }

    /// Writes `bytes` at `offset` of `path`, synced.
    func syncedWrite(_ path: String, at offset: Int, _ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
        let fd = open(path, O_WRONLY)
        XCTAssertGreaterThanOrEqual(fd, 0, "open \(path): \(Errno.name(errno))", file: file, line: line)
        guard fd >= 0 else { return }
        defer { close(fd) }
        XCTAssertEqual(bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, bytes.count, off_t(offset)) }, bytes.count,
                       "pwrite \(path): \(Errno.name(errno))", file: file, line: line)
        XCTAssertEqual(fsync(fd), 0, "fsync \(path): \(Errno.name(errno))", file: file, line: line)
    }

    /// `data` with `bytes` laid at `offset`, grown with zeros when it ends before.
    func laid(_ data: Data, at offset: Int, _ bytes: [UInt8]) -> Data {
        var result = data
        if result.count < offset + bytes.count { result.append(Data(count: offset + bytes.count - result.count)) }
        result.replaceSubrange(result.startIndex + offset..<result.startIndex + offset + bytes.count, with: bytes)
        return result
    }

    /// What the mount's check found after its replay (nil: it did not run).
    func checkFindings() -> String? {
        (try? String(contentsOfFile: stateDirectory + "/block-share-check", encoding: .utf8))
    }

    func remount(_ label: String, file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(unmountPurgefs(), [], "\(label): unmount", file: file, line: line)
        try mountPurgefs()
        XCTAssertEqual(checkFindings(), "", "\(label): the check after replay", file: file, line: line)
    }

    // MARK: Tests

    /// A 4 KiB write into a 256 MiB clone copies the blocks it touches, not the file.
    func testAWriteIntoACloneCopiesOnlyItsBlocks() throws {
        let original = try contents("big")
        run(["cp", m + "/big", m + "/copy"])
        XCTAssertEqual(numberAttr(m, "clone_savings"), UInt64(Self.big))
        let before = backingFree()
        let bytes = [UInt8](repeating: 0xCD, count: 4096)
        let offset = 100 << 20 + 1000
        syncedWrite(m + "/copy", at: offset, bytes)
        let grown = Int64(before) - Int64(backingFree())
        XCTAssertLessThanOrEqual(grown, Int64(4 * Self.blockSize), "a 4 KiB write into a clone grew the backing filesystem by \(grown) bytes")
        let savings = try XCTUnwrap(numberAttr(m, "clone_savings"))
        XCTAssertGreaterThanOrEqual(savings, UInt64(Self.big - 2 * Self.blockSize), "clone_savings \(savings)")
        XCTAssertLessThanOrEqual(savings, UInt64(Self.big))
        XCTAssertEqual(getAttr(m + "/copy", pf("flat")), .value("0"), "a sparse clone is not flat")
        assertMountReads("copy", laid(original, at: offset, bytes), "the clone after its write")
        assertMountReads("big", original, "the original after the clone's write")
        try remount("after the write")
        assertMountReads("copy", laid(original, at: offset, bytes), "the clone after a remount")
        assertMountReads("big", original, "the original after a remount")
        XCTAssertEqual(numberAttr(m, "clone_savings"), savings, "clone_savings after a remount")
    }

    /// Writes, truncates (down into a shared block, up), `O_TRUNC`, a write
    /// into the original (its members move onto a copy), a flatten: every
    /// member reads what was written into it, before and after a remount.
    func testEveryMemberReadsWhatWasWritten() throws {
        var expected = ["small": try contents("small")]
        for name in ["c1", "c2", "c3", "c4"] {
            run(["cp", m + "/small", m + "/" + name])
            expected[name] = expected["small"]
        }
        func write(_ name: String, at offset: Int, _ count: Int, _ value: UInt8) {
            let bytes = [UInt8](repeating: value, count: count)
            syncedWrite(m + "/" + name, at: offset, bytes)
            expected[name] = laid(expected[name]!, at: offset, bytes)
        }
        func truncate(_ name: String, to size: Int) {
            XCTAssertEqual(Glibc.truncate(m + "/" + name, off_t(size)), 0, "truncate \(name): \(Errno.name(errno))")
            let data = expected[name]!
            expected[name] = size <= data.count ? data.prefix(size) : data + Data(count: size - data.count)
        }
        func check(_ label: String) {
            for (name, data) in expected.sorted(by: { $0.key < $1.key }) { assertMountReads(name, data, label) }
        }
        write("c1", at: 5, 10, 1)
        write("c1", at: Self.small + 500, 1000, 2)  // the base's partial last block
        write("c2", at: 3 * Self.blockSize - 7, 20, 3)  // across two blocks
        write("c3", at: Self.small + 5000, 100, 4)  // past the end: a hole, then data
        check("after writes")
        truncate("c2", to: 2 * Self.blockSize + 77)  // down, into a shared block
        truncate("c2", to: 4 * Self.blockSize)  // up again: zeros
        write("c2", at: Self.blockSize + 1, 3, 5)
        truncate("c1", to: 0)
        write("c1", at: 0, 100, 6)
        check("after truncates")
        XCTAssertEqual(open(m + "/c3", O_WRONLY | O_TRUNC).closing(), 0, "O_TRUNC open of a sparse clone")
        expected["c3"] = Data()
        write("c3", at: 10, 10, 7)
        // The original's write moves its sparse clones onto a copy first.
        write("small", at: Self.blockSize * 2, 4096, 8)
        write("c4", at: 0, 1, 9)
        check("after the original's write")
        try remount("after writes and truncates")
        check("after a remount")
        XCTAssertEqual(setAttr(m + "/c4", pf("flatten"), "1"), 0, "flatten: \(Errno.name(errno))")
        XCTAssertEqual(getAttr(m + "/c4", pf("flat")), .value("1"))
        check("after a flatten")
        XCTAssertTrue(sameContent(m + "/c4", container + "/c4"), "a flattened clone is a plain file in the backing directory")
        XCTAssertEqual(unlink(m + "/c2"), 0)
        expected["c2"] = nil
        try remount("after a flatten and an unlink")
        check("after a second remount")
    }

    /// Five members under 120 random synced writes, `kill -9`, remount:
    /// every member reads back what was synced, the check finds nothing.
    func testSyncedWritesSurviveKill9() throws {
        let names = ["small", "c1", "c2", "c3", "c4"]
        var expected: [String: Data] = [:]
        expected["small"] = try contents("small")
        for name in names.dropFirst() {
            run(["cp", m + "/small", m + "/" + name])
            expected[name] = expected["small"]
        }
        var random = SystemRandomNumberGenerator()
        for _ in 0..<120 {
            let name = names.randomElement(using: &random)!
            let count = Int.random(in: 1...(3 * Self.blockSize), using: &random)
            let offset = Int.random(in: 0...(Self.small + Self.blockSize), using: &random)
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            syncedWrite(m + "/" + name, at: offset, bytes)
            expected[name] = laid(expected[name]!, at: offset, bytes)
        }
        for name in names { assertMountReads(name, expected[name]!, "before kill -9") }
        XCTAssertTrue(names.dropFirst().contains { getAttr(m + "/" + $0, pf("flat")) == .value("0") }, "some clone still shares blocks")
        killPurgefs()
        try mountPurgefs()
        XCTAssertEqual(checkFindings(), "", "the check after kill -9 and replay")
        for name in names { assertMountReads(name, expected[name]!, "after kill -9 and a remount") }
    }

    /// `fallocate` as a clone's first change (it becomes sparse, then the
    /// allocation needs its flat file) and on a sparse clone: growing,
    /// punching, zeroing read as they should.
    func testFallocateOnClones() throws {
        let original = try contents("small")
        for name in ["c1", "c2", "c3"] { run(["cp", m + "/small", m + "/" + name]) }
        // fallocate(1): -p punches (keeping the size), -z zeroes.
        func allocate(_ name: String, _ flag: String?, _ offset: Int, _ length: Int) {
            run(["fallocate"] + (flag.map { [$0] } ?? []) + ["-o", String(offset), "-l", String(length), m + "/" + name])
        }
        allocate("c1", nil, original.count, 4096)
        assertMountReads("c1", original + Data(count: 4096), "a clone grown by fallocate as its first change")
        syncedWrite(m + "/c2", at: 0, [1])
        allocate("c2", "-p", Self.blockSize - 10, 3 * Self.blockSize)
        var punched = laid(original, at: 0, [1])
        punched.replaceSubrange(Self.blockSize - 10..<4 * Self.blockSize - 10, with: Data(count: 3 * Self.blockSize))
        assertMountReads("c2", punched, "a sparse clone punched")
        syncedWrite(m + "/c3", at: 0, [1])
        allocate("c3", "-z", 100, 1000)
        assertMountReads("c3", laid(laid(original, at: 0, [1]), at: 100, [UInt8](repeating: 0, count: 1000)), "a sparse clone zeroed")
        assertMountReads("small", original, "the original")
        try remount("after fallocates")
        assertMountReads("c2", punched, "a sparse clone punched, after a remount")
    }

    /// The original unlinked, the data its sparse clones share is kept by
    /// the base's link alone: it is charged to the first of them, so
    /// `allocated` still counts it (once), and the original's name shows no
    /// link of purgefs's own while it lives.
    func testABaseWithoutItsOriginalIsChargedToAClone() throws {
        run(["cp", m + "/small", m + "/c1"])
        run(["cp", m + "/small", m + "/c2"])
        syncedWrite(m + "/c1", at: 0, [1])
        syncedWrite(m + "/c2", at: 0, [2])
        XCTAssertEqual(try status(m + "/small").st_nlink, 1, "the base's own link is not shown")
        let before = try XCTUnwrap(numberAttr(m, "allocated"))
        XCTAssertGreaterThanOrEqual(before, UInt64(Self.small), "the original's data counted")
        XCTAssertEqual(unlink(m + "/small"), 0)
        let after = try XCTUnwrap(numberAttr(m, "allocated"))
        XCTAssertEqual(after, before, "the shared data still counted once after the original's unlink")
        let savings = try XCTUnwrap(numberAttr(m, "clone_savings"))
        XCTAssertLessThan(savings, UInt64(Self.small + 2 * Self.blockSize), "one clone saves what it shares, the other bears the data")
        try remount("after the original's unlink")
        XCTAssertEqual(numberAttr(m, "allocated"), after, "after a remount")
    }

    /// An original in a purgeable zone whose written clone lives outside
    /// every zone: the clone bears the shared data, so the original is
    /// charged nothing and purging it frees nothing (as for linked clones).
    func testPurgingAnOriginalWhoseSparseCloneLivesOnFreesNothing() throws {
        try writeRandom(m + "/caches/original", count: Self.small, seed: 7)
        let original = try contents("caches/original")
        run(["cp", m + "/caches/original", m + "/kept"])
        syncedWrite(m + "/kept", at: 0, [1])
        let kept = laid(original, at: 0, [1])
        XCTAssertEqual(getAttr(m + "/kept", pf("flat")), .value("0"))
        XCTAssertTrue(eventually { getAttr(m, pf("purgeable")) == .value("0") }, "purgeable: \(getAttr(m, pf("purgeable")))")
        let purgedBefore = try XCTUnwrap(numberAttr(m, "purged_bytes"))
        let allocatedBefore = try XCTUnwrap(numberAttr(m, "allocated"))
        XCTAssertEqual(setAttr(m, pf("purge"), "all"), 0)
        XCTAssertTrue(eventually { !exists(m + "/caches/original") }, "the original was purged")
        XCTAssertEqual(try XCTUnwrap(numberAttr(m, "purged_bytes")) - purgedBefore, 0, "the purge freed nothing")
        XCTAssertEqual(numberAttr(m, "allocated"), allocatedBefore, "the data is still stored, once")
        assertMountReads("kept", kept, "the clone after its original was purged")
        assertAccounting("after purging an original whose sparse clone lives on")
        try remount("after the purge")
        assertMountReads("kept", kept, "the clone after a remount")
        assertAccounting("after a remount")
    }

    /// Writes never synced by the writer are kept by a clean unmount: the
    /// release commits what a sparse clone wrote (its anchor synced, then
    /// its map), and the next mount reads them back.
    func testUnsyncedWritesSurviveACleanUnmount() throws {
        let original = try contents("small")
        run(["cp", m + "/small", m + "/c1"])
        let fd = open(m + "/c1", O_WRONLY)
        XCTAssertGreaterThanOrEqual(fd, 0)
        var expected = original
        for (index, offset) in [0, 3 * Self.blockSize + 5, Self.small - 10].enumerated() {
            let bytes = [UInt8](repeating: UInt8(0x30 + index), count: 100)
            XCTAssertEqual(bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, bytes.count, off_t(offset)) }, bytes.count)
            expected = laid(expected, at: offset, bytes)
        }
        close(fd)
        try remount("after unsynced writes")
        assertMountReads("c1", expected, "after a clean unmount and a remount")
        assertMountReads("small", original, "the original")
    }

    /// The check is no formality: an own block whose data went (punched in
    /// the backing directory while unmounted) is found at the next mount.
    func testTheCheckFindsAnOwnBlockWithoutData() throws {
        run(["cp", m + "/small", m + "/c1"])
        syncedWrite(m + "/c1", at: 10, [1, 2, 3])
        XCTAssertEqual(unmountPurgefs(), [])
        run(["fallocate", "--punch-hole", "--offset", "0", "--length", String(Self.blockSize), container + "/c1"])
        try mountPurgefs()
        let findings = try XCTUnwrap(checkFindings())
        XCTAssertTrue(findings.contains("own blocks 0..<1 hold no data"), "the check found: \(findings.debugDescription)")
    }

    /// A sparse clone purged while the kernel still knows its node (an
    /// `O_PATH` descriptor here, as LinkedClonePurgeTests hold one; in use,
    /// a name looked up just before the purge): opened again through the
    /// node it reads its own bytes, the shared ones too, as a purged linked
    /// clone does. Before, the purge dropped its map at once and the node
    /// read its anchor: zeros where it shared.
    func testAPurgedSparseCloneReadsItsBytesThroughItsNode() throws {
        let original = try contents("small")
        run(["cp", m + "/small", m + "/caches/clone"])
        let bytes = [UInt8](repeating: 0x5C, count: 4096)
        syncedWrite(m + "/caches/clone", at: 3 * Self.blockSize + 100, bytes)
        XCTAssertEqual(getAttr(m + "/caches/clone", pf("flat")), .value("0"), "the clone is sparse")
        let expected = laid(original, at: 3 * Self.blockSize + 100, bytes)
        let node = open(m + "/caches/clone", clinux_O_PATH)
        XCTAssertGreaterThanOrEqual(node, 0, "open O_PATH: \(Errno.name(errno))")
        guard node >= 0 else { return }
        defer { close(node) }
        XCTAssertEqual(setAttr(m, pf("purge"), "all"), 0)
        XCTAssertTrue(eventually { !exists(container + "/caches/clone") }, "the clone was purged")
        let reader = open("/proc/self/fd/\(node)", O_RDONLY)
        XCTAssertGreaterThanOrEqual(reader, 0, "reopening the purged clone's node: \(Errno.name(errno))")
        guard reader >= 0 else { return }
        let read = readAll(reader)
        close(reader)
        XCTAssertEqual(read?.count, expected.count)
        XCTAssertTrue(read == expected, "the purged clone's node reads its bytes (first difference at \(read.map { firstDifference($0, expected) } ?? -1))")
        assertMountReads("small", original, "the original")
    }

    /// Two sparse clones purged while their nodes were known are kept, then
    /// dropped once the nodes are forgotten, at a later unlink. Before, the
    /// sweep of one kept member swept the other, which swept the first, and
    /// so on until the daemon's stack overflowed (it died without a word).
    func testPurgedSparseClonesKeptForTheirNodesAreDroppedOnceForgotten() throws {
        var nodes: [Int32] = []
        for name in ["one", "two"] {
            run(["cp", m + "/small", m + "/caches/" + name])
            syncedWrite(m + "/caches/" + name, at: 100, [7])
            let node = open(m + "/caches/" + name, clinux_O_PATH)
            XCTAssertGreaterThanOrEqual(node, 0, "open O_PATH: \(Errno.name(errno))")
            nodes.append(node)
        }
        XCTAssertEqual(numberAttr(m, "not_flat"), 2)
        XCTAssertEqual(setAttr(m, pf("purge"), "all"), 0)
        XCTAssertTrue(eventually { !exists(container + "/caches/one") && !exists(container + "/caches/two") }, "both were purged")
        XCTAssertEqual(numberAttr(m, "not_flat"), 2, "kept while their nodes are known")
        for node in nodes where node >= 0 { close(node) }
        // Each unlink sweeps the kept members whose nodes the kernel has forgotten since.
        XCTAssertTrue(eventually(timeout: 30) {
            try? writeRandom(m + "/sweep", count: 10, seed: 1)
            unlink(m + "/sweep")
            return numberAttr(m, "not_flat") == 0
        }, "dropped once their nodes were forgotten: not_flat \(String(describing: numberAttr(m, "not_flat")))")
        assertMountReads("small", try contents("small"), "the original")
        try remount("after the kept members were dropped")
    }
}

private extension Int32 {
    /// Closes this descriptor; its `open` result when that failed.
    func closing() -> Int32 { self < 0 ? self : close(self) }
}
