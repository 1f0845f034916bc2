import CLinux
import Foundation
import Glibc
import PurgeCore
import PurgeSys
import Synchronization
import XCTest

@testable import PurgeFS

/// A sparse clone member on real files in a temporary directory (ext4 where
/// the machine's temporary directory is): reads and writes against a plain
/// file's model, the anchor growing by the touched blocks only, and kills
/// that lose pending map records but never a synced byte.
final class SparseMemberFileTests: XCTestCase {
    private let block = BlockMap.blockSize
    private var made: [String] = []
    private var opened: [FileDescriptor] = []

    override func tearDown() {
        for file in opened { file.closeQuietly() }
        opened = []
        for path in made.reversed() { try? FileManager.default.removeItem(atPath: path) }
        made = []
    }

    /// A fresh directory, opened.
    private func directory() throws -> FileDescriptor {
        var template = Array("\(NSTemporaryDirectory())/purgefs-sparse.XXXXXX".utf8CString)
        let path = try XCTUnwrap(template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }.map { String(cString: $0) })
        made.append(path)
        return try keep(FileDescriptor.open(path: path, flags: O_RDONLY | O_DIRECTORY))
    }

    private func keep(_ file: FileDescriptor) -> FileDescriptor {
        opened.append(file)
        return file
    }

    private func create(_ name: String, in directory: FileDescriptor, bytes: [UInt8] = []) throws -> FileDescriptor {
        let file = try keep(FileDescriptor.open(name, in: directory, flags: O_RDWR | O_CREAT | O_EXCL, mode: 0o600))
        if !bytes.isEmpty { XCTAssertEqual(try bytes.withUnsafeBytes { try file.write($0, at: 0) }, bytes.count) }
        return file
    }

    private func randomBytes(_ count: Int, _ generator: inout SplitMix64) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { buffer in
            var index = 0
            while index < count {
                var word = generator.next()
                for _ in 0..<min(8, count - index) {
                    buffer[index] = UInt8(truncatingIfNeeded: word)
                    word >>= 8
                    index += 1
                }
            }
        }
        return bytes
    }

    private func read(_ file: SparseMemberFile, offset: UInt64, count: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0xEE, count: count)
        let got = try bytes.withUnsafeMutableBytes { try file.read(into: $0, at: offset) }
        return Array(bytes[..<got])
    }

    private func whole(_ file: SparseMemberFile) throws -> [UInt8] {
        try read(file, offset: 0, count: Int(file.size))
    }

    private func write(_ file: SparseMemberFile, _ bytes: [UInt8], at offset: UInt64) throws {
        XCTAssertEqual(try bytes.withUnsafeBytes { try file.write($0, at: offset) }, bytes.count)
    }

    private func plainRead(_ file: FileDescriptor) throws -> [UInt8] {
        let size = Int(try file.status().st_size)
        var bytes = [UInt8](repeating: 0, count: size)
        XCTAssertEqual(try bytes.withUnsafeMutableBytes { try file.read(into: $0, at: 0) }, size)
        return bytes
    }

    private func identity(_ file: FileDescriptor) throws -> EntryID { EntryID(try file.status()) }

    /// The model written as the operation does to a plain file.
    private func apply(write bytes: [UInt8], at offset: Int, to model: inout [UInt8]) {
        if model.count < offset + bytes.count { model += [UInt8](repeating: 0, count: offset + bytes.count - model.count) }
        model.replaceSubrange(offset..<offset + bytes.count, with: bytes)
    }

    private func apply(truncate size: Int, to model: inout [UInt8]) {
        if size < model.count { model.removeLast(model.count - size) } else { model += [UInt8](repeating: 0, count: size - model.count) }
    }

    /// `SEEK_DATA`/`SEEK_HOLE` answers at `offset` agree with `model`: holes read as zeros.
    private func checkSeek(_ file: SparseMemberFile, at offset: UInt64, model: [UInt8]) throws {
        let hole = try file.seek(to: offset, whence: clinux_SEEK_HOLE)
        XCTAssertTrue(offset <= hole && hole <= UInt64(model.count), "hole \(hole) from \(offset), size \(model.count)")
        if hole < UInt64(model.count) { XCTAssertEqual(model[Int(hole)], 0, "a hole at \(hole) reads zero") }
        do {
            let data = try file.seek(to: offset, whence: clinux_SEEK_DATA)
            XCTAssertTrue(offset <= data && data < UInt64(model.count))
            XCTAssertTrue(model[Int(offset)..<Int(data)].allSatisfy { $0 == 0 }, "skipped to data at \(data) over zeros only")
        } catch {
            XCTAssertEqual(error, Errno(ENXIO))
            XCTAssertTrue(model[Int(offset)...].allSatisfy { $0 == 0 }, "no data from \(offset): zeros only")
        }
        XCTAssertThrowsError(try file.seek(to: UInt64(model.count), whence: clinux_SEEK_DATA))
    }

    func testRandomWritesAndTruncatesReadAsAPlainFileAndLeaveTheBaseAlone() throws {
        let dir = try directory(), stateDirectory = try directory()
        var generator = SplitMix64(seed: 37)
        let baseBytes = randomBytes(Int(37 * block + 12345), &generator)
        let base = try create("base", in: dir, bytes: baseBytes), anchor = try create("anchor", in: dir)
        let maps = try BlockMaps(directory: StateDirectory(descriptor: stateDirectory))
        let member = try identity(anchor)
        let file = try SparseMemberFile.start(member: member, anchor: try anchor.duplicate(), base: try base.duplicate(), handle: (1, [7]), maps: maps)
        XCTAssertEqual(file.snapshot.map.sharedLength, 37 * block)
        var model = baseBytes
        for step in 0..<3000 {
            let span = UInt64(model.count) + 2 * block
            switch generator.next() % 10 {
            case 0..<5:
                let offset = generator.next() % span
                let bytes = randomBytes(Int(1 + generator.next() % (2 * block + 100)), &generator)
                try write(file, bytes, at: offset)
                apply(write: bytes, at: Int(offset), to: &model)
            case 5:
                // Mostly small cuts, so the file does not shrink away.
                let size = generator.next() % 4 == 0 ? generator.next() % span : UInt64(model.count) - min(UInt64(model.count), generator.next() % block)
                try file.truncate(to: size)
                apply(truncate: Int(size), to: &model)
            case 6:
                try file.sync()
            case 7 where generator.next() % 2 == 0:
                let offset = generator.next() % span, length = generator.next() % (3 * block)
                try file.punch(offset: offset, length: length)
                let end = min(Int(offset + length), model.count)
                if Int(offset) < end { model.replaceSubrange(Int(offset)..<end, with: repeatElement(0, count: end - Int(offset))) }
            default:
                let offset = generator.next() % span, count = Int(generator.next() % (3 * block))
                let expected = offset < UInt64(model.count) ? Array(model[Int(offset)..<min(model.count, Int(offset) + count)]) : []
                XCTAssertEqual(try read(file, offset: offset, count: count), expected, "step \(step)")
                if offset < UInt64(model.count) { try checkSeek(file, at: offset, model: model) }
            }
            XCTAssertEqual(file.size, UInt64(model.count))
        }
        XCTAssertEqual(try whole(file), model)
        XCTAssertEqual(try plainRead(base), baseBytes, "the base is never written")
        try file.sync()
        XCTAssertEqual(maps.book.durable[member]?.map, file.snapshot.map, "synced: the journal has the live map")
        XCTAssertFalse(maps.book.hasPending)
        // Flattened: the anchor alone holds the content, the map is gone for good.
        try file.flatten()
        XCTAssertEqual(try plainRead(anchor), model)
        XCTAssertNil(maps.book.durable[member])
        let reopened = try BlockMaps(directory: StateDirectory(descriptor: stateDirectory))
        XCTAssertEqual(reopened.book, BlockMapBook())
    }

    /// Flattened, a member is its anchor: changes go there and make no
    /// records (a record about a dropped map would not apply).
    func testAFlattenedMemberChangesItsAnchorAlone() throws {
        let dir = try directory(), stateDirectory = try directory()
        var generator = SplitMix64(seed: 8)
        let baseBytes = randomBytes(Int(8 * block), &generator)
        let base = try create("base", in: dir, bytes: baseBytes), anchor = try create("anchor", in: dir)
        let maps = try BlockMaps(directory: StateDirectory(descriptor: stateDirectory))
        let file = try SparseMemberFile.start(member: try identity(anchor), anchor: try anchor.duplicate(), base: try base.duplicate(), handle: (1, []), maps: maps)
        var model = baseBytes
        try write(file, [9], at: 3 * block)
        apply(write: [9], at: Int(3 * block), to: &model)
        try file.flatten()
        XCTAssertEqual(maps.book, BlockMapBook())
        try write(file, [1, 2, 3], at: 10)
        apply(write: [1, 2, 3], at: 10, to: &model)
        try file.truncate(to: 5 * block + 5)
        apply(truncate: Int(5 * block + 5), to: &model)
        try file.punch(offset: 0, length: 4)
        model.replaceSubrange(0..<4, with: [0, 0, 0, 0])
        try file.sync()
        XCTAssertEqual(try plainRead(anchor), model)
        XCTAssertEqual(try whole(file), model)
        XCTAssertEqual(maps.book, BlockMapBook())
        XCTAssertThrowsError(try file.rebase(to: try base.duplicate()))
    }

    func testAFourKilobyteWriteIntoA256MebibyteMemberCostsOneBlock() throws {
        let dir = try directory(), stateDirectory = try directory()
        var generator = SplitMix64(seed: 256)
        let size: UInt64 = 256 << 20
        let base = try create("base", in: dir)
        try base.truncate(to: Int64(size))
        // Real data around where the write goes and elsewhere.
        for offset: UInt64 in [0, 100 << 20, 200 << 20] {
            let bytes = randomBytes(Int(4 * block), &generator)
            _ = try bytes.withUnsafeBytes { try base.write($0, at: Int64(offset)) }
        }
        try base.sync()
        let anchor = try create("anchor", in: dir)
        let maps = try BlockMaps(directory: StateDirectory(descriptor: stateDirectory))
        let file = try SparseMemberFile.start(member: try identity(anchor), anchor: try anchor.duplicate(), base: try base.duplicate(), handle: (1, []), maps: maps)
        try file.sync()
        let fresh = try anchor.status()
        XCTAssertEqual(UInt64(fresh.st_size), size)
        XCTAssertEqual(fresh.st_blocks, 0, "a fresh member holds nothing")
        let before = try read(file, offset: (100 << 20) + 3000, count: 8192)
        let bytes = randomBytes(4096, &generator)
        try write(file, bytes, at: (100 << 20) + 3000)
        try file.sync()
        let allocated = UInt64(try anchor.status().st_blocks) * 512
        XCTAssertGreaterThan(allocated, 0)
        XCTAssertLessThanOrEqual(allocated, 2 * block, "one 64 KiB block copied (and a block of metadata at most), not 256 MiB")
        XCTAssertEqual(file.snapshot.map.own, BlockRanges([1600..<1601]))
        var expected = before
        expected.replaceSubrange(0..<4096, with: bytes)
        XCTAssertEqual(try read(file, offset: (100 << 20) + 3000, count: 8192), expected)
        XCTAssertEqual(try read(file, offset: 200 << 20, count: 100), try read(base: base, offset: 200 << 20, count: 100))
        // A write across a block boundary copies both blocks, no more.
        try write(file, randomBytes(4096, &generator), at: (150 << 20) - 2048)
        try file.sync()
        XCTAssertLessThanOrEqual(UInt64(try anchor.status().st_blocks) * 512, allocated + 2 * block + 4096)
        XCTAssertEqual(file.snapshot.map.own.count, 3)
    }

    private func read(base: FileDescriptor, offset: UInt64, count: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        _ = try bytes.withUnsafeMutableBytes { try base.read(into: $0, at: Int64(offset)) }
        return bytes
    }

    /// Five members of one base under random writes, truncates and syncs;
    /// killed (pending records lost, the anchors as the kill left them),
    /// reopened from the journal and repaired: the check finds nothing, and
    /// every byte reads as synced unless written since.
    func testAKillLosesPendingRecordsButNoSyncedByteAndLeavesNothingUnreferenced() throws {
        let dir = try directory(), stateDirectory = try directory()
        let state = StateDirectory(descriptor: stateDirectory)
        var generator = SplitMix64(seed: 120)
        let baseBytes = randomBytes(Int(24 * block + 777), &generator)
        let base = try create("base", in: dir, bytes: baseBytes)
        let baseID = try identity(base)
        var maps = try BlockMaps(directory: state)
        var anchors: [EntryID: FileDescriptor] = [:]
        var files: [EntryID: SparseMemberFile] = [:]
        for index in 0..<5 {
            let anchor = try create("a\(index)", in: dir)
            let id = try identity(anchor)
            anchors[id] = anchor
            files[id] = try SparseMemberFile.start(member: id, anchor: try anchor.duplicate(), base: try base.duplicate(), handle: (1, [UInt8(index)]), maps: maps)
            try files[id]!.sync()
        }
        let members = anchors.keys.sorted()
        var latest = Dictionary(uniqueKeysWithValues: members.map { ($0, baseBytes) })
        var synced = latest
        var punched = 0
        for round in 0..<8 {
            for _ in 0..<120 {
                let id = members[Int(generator.next() % UInt64(members.count))]
                let file = files[id]!
                let span = UInt64(latest[id]!.count) + block
                switch generator.next() % 8 {
                case 0..<5:
                    let offset = generator.next() % span
                    let bytes = randomBytes(Int(1 + generator.next() % (block + block / 2)), &generator)
                    try write(file, bytes, at: offset)
                    apply(write: bytes, at: Int(offset), to: &latest[id]!)
                case 5 where generator.next() % 3 == 0:
                    let offset = generator.next() % span, length = generator.next() % (2 * block)
                    try file.punch(offset: offset, length: length)
                    let end = min(Int(offset + length), latest[id]!.count)
                    if Int(offset) < end { latest[id]!.replaceSubrange(Int(offset)..<end, with: repeatElement(0, count: end - Int(offset))) }
                case 5:
                    let size = UInt64(latest[id]!.count) - min(UInt64(latest[id]!.count), generator.next() % (3 * block)) + generator.next() % 2 * block
                    let sharedLength = file.snapshot.map.sharedLength
                    try file.truncate(to: size)
                    apply(truncate: Int(size), to: &latest[id]!)
                    // A truncate that lowers sharedLength syncs the member before freeing.
                    if file.snapshot.map.sharedLength < sharedLength { synced[id] = latest[id]! }
                default:
                    try file.sync()
                    synced[id] = latest[id]!
                }
            }
            // The kill: pending records are gone; the anchors keep what reached them.
            maps.forgetPending()
            files = [:]
            maps = try BlockMaps(directory: state)
            let durable = maps.book
            XCTAssertEqual(Set(durable.durable.keys), Set(members), "round \(round): every member's start was synced")
            var states: [EntryID: BlockShareCheck.Anchor] = [:]
            for id in members { states[id] = try BlockShareCheck.Anchor(reading: anchors[id]!) }
            let repairs = BlockShareCheck.replay(book: durable, anchors: states, linkedMembers: [], baseLinks: [baseID])
            XCTAssertEqual(repairs.records, [])
            XCTAssertEqual(repairs.unlinkBases, [])
            punched += repairs.punches.values.reduce(0) { $0 + $1.count }
            try maps.repair(repairs, anchor: { (id) throws(Errno) in try anchors[id]!.duplicate() }, unlinkBase: { _ in XCTFail("no base to unlink") })
            for id in members { states[id] = try BlockShareCheck.Anchor(reading: anchors[id]!) }
            XCTAssertEqual(
                BlockShareCheck.findings(maps: maps.book.durable.mapValues(\.map), anchors: states, baseLinks: [baseID]), [],
                "round \(round): after replay nothing is unreferenced and every own block holds data")
            for id in members {
                let file = try SparseMemberFile.open(member: id, anchor: try anchors[id]!.duplicate(), base: try base.duplicate(), maps: maps)
                files[id] = file
                let after = try whole(file)
                let was = synced[id]!, now = latest[id]!
                for index in after.indices {
                    let asSynced = index < was.count && after[index] == was[index]
                    let asWritten = index < now.count && after[index] == now[index]
                    let grown = index >= was.count && after[index] == 0
                    if !(asSynced || asWritten || grown) {
                        XCTFail("round \(round), member \(id): byte \(index) is \(after[index]), synced \(index < was.count ? "\(was[index])" : "-")")
                        break
                    }
                }
                XCTAssertGreaterThanOrEqual(after.count, min(was.count, now.count), "round \(round): synced bytes are all there")
                latest[id] = after
                synced[id] = after
            }
        }
        XCTAssertGreaterThan(punched, 0, "some kills left copies no durable record claimed, and replay punched them")
        XCTAssertEqual(try plainRead(base), baseBytes)
    }

    func testAMemberKilledBeforeItsFirstSyncHasNoMap() throws {
        let dir = try directory(), stateDirectory = try directory()
        let base = try create("base", in: dir, bytes: [UInt8](repeating: 9, count: Int(3 * block)))
        let anchor = try create("anchor", in: dir)
        var maps = try BlockMaps(directory: StateDirectory(descriptor: stateDirectory))
        let file = try SparseMemberFile.start(member: try identity(anchor), anchor: try anchor.duplicate(), base: try base.duplicate(), handle: (1, []), maps: maps)
        try write(file, [1, 2, 3], at: 5)
        maps.forgetPending()
        maps = try BlockMaps(directory: StateDirectory(descriptor: stateDirectory))
        XCTAssertEqual(maps.book, BlockMapBook(), "the start record was never durable: the member still shares through its link")
    }

    /// A journal ending in a torn line (a kill during an append) is folded
    /// into a new snapshot before the next append, which would otherwise
    /// follow the torn bytes on the same line and make the journal unreadable.
    func testAppendsAfterATornJournalLineStayReadable() throws {
        let stateDirectory = try directory()
        let state = StateDirectory(descriptor: stateDirectory)
        let one = EntryID(device: 1, inode: 11), base = EntryID(device: 1, inode: 5)
        var maps = try BlockMaps(directory: state)
        maps.record(.start(member: one, base: base, sharedLength: 8 * block, handleType: 1, handle: []))
        try maps.commit(one)
        let journal = try FileDescriptor.open("block-maps.journal", in: stateDirectory, flags: O_WRONLY | O_APPEND)
        try journal.writeAll("own 1 11 2")
        journal.closeQuietly()
        maps = try BlockMaps(directory: state)
        XCTAssertEqual(maps.book.durable[one]?.map.own, BlockRanges(), "the torn line is ignored")
        maps.record(.own(member: one, blocks: 4..<5))
        try maps.commit(one)
        maps = try BlockMaps(directory: state)
        XCTAssertEqual(maps.book.durable[one]?.map.own, BlockRanges([4..<5]))
        maps.record(.own(member: one, blocks: 6..<7))
        try maps.commit(nil)
        XCTAssertEqual(try BlockMaps(directory: state).book.durable[one]?.map.own, BlockRanges([4..<5, 6..<7]))
    }

    /// A truncate down whose sync fails leaves the anchor longer than the
    /// view: the member refuses changes (a write past the new end would
    /// otherwise expose the anchor's old bytes) but still reads.
    func testATruncateThatFailsHalfWayRefusesFurtherChanges() throws {
        let dir = try directory(), stateDirectory = try directory()
        var generator = SplitMix64(seed: 5)
        let baseBytes = randomBytes(Int(6 * block), &generator)
        let base = try create("base", in: dir, bytes: baseBytes), anchor = try create("anchor", in: dir)
        // The journal cannot be made: every commit fails.
        try stateDirectory.makeDirectory("block-maps.journal", mode: 0o700)
        let maps = try BlockMaps(directory: StateDirectory(descriptor: stateDirectory))
        let file = try SparseMemberFile.start(member: try identity(anchor), anchor: try anchor.duplicate(), base: try base.duplicate(), handle: (1, []), maps: maps)
        try write(file, [UInt8](repeating: 1, count: 100), at: 5 * block)
        XCTAssertThrowsError(try file.truncate(to: 2 * block + 10))
        XCTAssertEqual(try whole(file), Array(baseBytes[..<Int(2 * block + 10)]), "reads stop at the new end")
        XCTAssertThrowsError(try file.write(UnsafeRawBufferPointer(start: nil, count: 0), at: 3 * block)) { error in
            XCTAssertEqual(error as? Errno, Errno.ioError)
        }
        XCTAssertThrowsError(try file.truncate(to: 6 * block))
        XCTAssertThrowsError(try file.punch(offset: 0, length: 10))
        XCTAssertEqual(file.size, 2 * block + 10)
    }

    /// A member dropped while a reader or writer still holds its file (two
    /// closes at once, a purge beside a write): the held file reads what it
    /// held through descriptors still open, refuses changes (`ESTALE`) and
    /// records nothing, and a later `start` of the same inode number (ext4
    /// reuses it) commits. Before, the drop closed the descriptors under
    /// it: `EBADF`, or another file's bytes once a number was reused, and a
    /// record of a member the book no longer had trapped that commit.
    func testAFileHeldPastItsMembersDropReadsItsOwnDescriptorsAndRecordsNothing() throws {
        let dir = try directory(), stateDirectory = try directory(), anchors = try directory()
        var generator = SplitMix64(seed: 21)
        let baseBytes = randomBytes(Int(4 * block), &generator)
        let base = try create("base", in: dir, bytes: baseBytes), anchor = try create("anchor", in: dir)
        let member = try identity(anchor)
        let maps = try BlockMaps(directory: StateDirectory(descriptor: stateDirectory))
        let members = SparseMembers(maps: maps, anchors: anchors, root: dir)
        try members.linkBase(base)
        let file = try SparseMemberFile.start(
            member: member, anchor: try anchor.duplicate(), base: try base.duplicate(), handle: (1, []), maps: maps)
        members.started(file, base: try identity(base))
        try file.sync()
        var model = baseBytes
        try write(file, [1, 2, 3], at: block + 5)
        apply(write: [1, 2, 3], at: Int(block + 5), to: &model)

        try members.drop(member)
        XCTAssertFalse(members.has(member))
        // New descriptors take the lowest free numbers: the held file's, were they closed.
        let others = try (0..<4).map { try create("other\($0)", in: dir, bytes: [UInt8](repeating: 0xAB, count: Int(block))) }
        XCTAssertTrue(try whole(file) == model, "the held file reads what it held")
        XCTAssertThrowsError(try [UInt8](repeating: 9, count: 10).withUnsafeBytes { try file.write($0, at: 2 * block) }) {
            XCTAssertEqual($0 as? Errno, Errno(ESTALE))
        }
        XCTAssertThrowsError(try file.truncate(to: 10)) { XCTAssertEqual($0 as? Errno, Errno(ESTALE)) }
        for other in others { XCTAssertTrue(try plainRead(other) == [UInt8](repeating: 0xAB, count: Int(block)), "another file left alone") }
        XCTAssertEqual(maps.book.pendingRecords(of: member), [], "nothing recorded after the drop")

        let again = try SparseMemberFile.start(
            member: member, anchor: try anchor.duplicate(), base: try base.duplicate(), handle: (1, []), maps: maps)
        members.started(again, base: try identity(base))
        try again.sync()
        XCTAssertEqual(try whole(again), baseBytes)
        let reread = try BlockMaps(directory: StateDirectory(descriptor: stateDirectory))
        XCTAssertEqual(
            reread.book.durable[member]?.map,
            BlockMap(base: try identity(base), sharedLength: UInt64(baseBytes.count), baseStamp: BaseStamp(try base.status())))
    }

    /// The last member's drop with another member's start arriving before
    /// it returns: the mount still knows the started member. Before, the
    /// drop read "none left" from the table and stored it after the start's
    /// "some": every question then answered "not sparse" and reads went to
    /// the anchor's holes (zeros where the member shares) until the next start.
    func testAStartDuringTheLastMembersDropLeavesTheMountKnowingIt() throws {
        let dir = try directory(), stateDirectory = try directory(), anchors = try directory()
        var generator = SplitMix64(seed: 33)
        let base = try create("base", in: dir, bytes: randomBytes(Int(2 * block), &generator))
        let maps = try BlockMaps(directory: StateDirectory(descriptor: stateDirectory))
        let files = try (0..<2).map { index in
            let anchor = try create("anchor\(index)", in: dir)
            return try SparseMemberFile.start(
                member: try identity(anchor), anchor: try anchor.duplicate(), base: try base.duplicate(), handle: (1, []), maps: maps)
        }
        let baseID = try identity(base)
        let arriving = Mutex<SparseMembers?>(nil)
        let members = SparseMembers(maps: maps, anchors: anchors, root: dir, afterDrop: {
            arriving.withLock { members in
                defer { members = nil }
                members?.started(files[1], base: baseID)
            }
        })
        try members.linkBase(base)
        members.started(files[0], base: baseID)
        arriving.withLock { $0 = members }
        try members.drop(files[0].member)
        XCTAssertTrue(members.has(files[1].member), "the member started during the drop is sparse")
        XCTAssertFalse(members.has(files[0].member))
    }

    /// A member kept for its node once it is gone, asked to be kept after a
    /// drop that came first (two threads deciding about one member): a later
    /// member with its inode number (ext4 reuses them) is not marked kept.
    /// Before, it was, and the sweep of kept members dropped it, still
    /// named, once the kernel forgot its node: it then read holes.
    func testAMemberKeptAfterItsDropLeavesNoMarkForItsInodeNumber() throws {
        let dir = try directory(), stateDirectory = try directory(), anchors = try directory()
        var generator = SplitMix64(seed: 35)
        let base = try create("base", in: dir, bytes: randomBytes(Int(2 * block), &generator))
        let anchor = try create("anchor", in: dir)
        let maps = try BlockMaps(directory: StateDirectory(descriptor: stateDirectory))
        let members = SparseMembers(maps: maps, anchors: anchors, root: dir)
        try members.linkBase(base)
        func start() throws -> SparseMemberFile {
            let file = try SparseMemberFile.start(
                member: try identity(anchor), anchor: try anchor.duplicate(), base: try base.duplicate(), handle: (1, []), maps: maps)
            members.started(file, base: try identity(base))
            return file
        }
        let first = try start()
        try members.drop(first.member)
        members.keep(first.member)
        XCTAssertFalse(members.isKept(first.member), "a dropped member is not kept")
        let again = try start()
        XCTAssertTrue(members.has(again.member))
        XCTAssertFalse(members.isKept(again.member), "the new member with that inode number is not marked kept")
    }

    /// The primary's break: its data copied, the member moved onto the copy
    /// (durably) before the primary is written; the member reads as before
    /// and its journaled map names the copy.
    func testARebasedMemberReadsTheCopyOnceThePrimaryIsWritten() throws {
        let dir = try directory(), stateDirectory = try directory()
        var generator = SplitMix64(seed: 9)
        let baseBytes = randomBytes(Int(8 * block + 99), &generator)
        let primary = try create("primary", in: dir, bytes: baseBytes), anchor = try create("anchor", in: dir)
        let member = try identity(anchor)
        var maps = try BlockMaps(directory: StateDirectory(descriptor: stateDirectory))
        let file = try SparseMemberFile.start(member: member, anchor: try anchor.duplicate(), base: try primary.duplicate(), handle: (1, []), maps: maps)
        var model = baseBytes
        let bytes = randomBytes(5000, &generator)
        try write(file, bytes, at: 3 * block - 100)
        apply(write: bytes, at: Int(3 * block - 100), to: &model)
        try file.sync()
        let copy = try create("z", in: dir, bytes: baseBytes)
        try file.rebase(to: try copy.duplicate())
        // The primary is written now, all over.
        let garbage = randomBytes(baseBytes.count, &generator)
        _ = try garbage.withUnsafeBytes { try primary.write($0, at: 0) }
        XCTAssertEqual(try whole(file), model)
        maps.forgetPending()
        maps = try BlockMaps(directory: StateDirectory(descriptor: stateDirectory))
        XCTAssertEqual(maps.book.durable[member]?.map.base, try identity(copy), "the rebase is durable when rebase returns")
        XCTAssertThrowsError(try SparseMemberFile.open(member: member, anchor: try anchor.duplicate(), base: try primary.duplicate(), maps: maps))
        XCTAssertEqual(try whole(SparseMemberFile.open(member: member, anchor: try anchor.duplicate(), base: try copy.duplicate(), maps: maps)), model)
        let maps1 = maps.book.durable.mapValues(\.map)
        let state = try BlockShareCheck.Anchor(reading: anchor)
        XCTAssertEqual(BlockShareCheck.findings(maps: maps1, anchors: [member: state], baseLinks: [try identity(copy)]), [])
        XCTAssertEqual(BlockShareCheck.findings(maps: maps1, anchors: [member: state], baseLinks: [try identity(primary)]), [
            .danglingBase(member: member, base: try identity(copy)), .unreferencedBase(base: try identity(primary)),
        ])
    }

    /// Replay's repairs on files: a member killed before its rename (still a
    /// linked member) is dropped durably and its anchor emptied; a base
    /// nobody names is unlinked; a copy no record claims is punched.
    func testRepairsEmptyDropPunchAndUnlink() throws {
        let dir = try directory(), stateDirectory = try directory()
        var generator = SplitMix64(seed: 3)
        let base = try create("base", in: dir, bytes: randomBytes(Int(4 * block), &generator))
        let early = try create("early", in: dir), kept = try create("kept", in: dir)
        var maps = try BlockMaps(directory: StateDirectory(descriptor: stateDirectory))
        var files: [SparseMemberFile] = []
        for anchor in [early, kept] {
            let file = try SparseMemberFile.start(member: try identity(anchor), anchor: try anchor.duplicate(), base: try base.duplicate(), handle: (1, []), maps: maps)
            try file.sync()
            files.append(file)
        }
        try write(files[1], [7], at: 2 * block + 1)
        maps.forgetPending()
        maps = try BlockMaps(directory: StateDirectory(descriptor: stateDirectory))
        let orphan = EntryID(device: 1, inode: 999_999)
        let anchors = [early, kept]
        var states: [EntryID: BlockShareCheck.Anchor] = [:]
        for anchor in anchors { states[try identity(anchor)] = try BlockShareCheck.Anchor(reading: anchor) }
        let repairs = BlockShareCheck.replay(
            book: maps.book, anchors: states, linkedMembers: [try identity(early)], baseLinks: [try identity(base), orphan])
        XCTAssertEqual(repairs.punches, [try identity(kept): [2..<3]])
        var unlinked: [EntryID] = []
        let byIdentity = Dictionary(uniqueKeysWithValues: try anchors.map { (try identity($0), $0) })
        try maps.repair(repairs, anchor: { (id) throws(Errno) in try byIdentity[id]!.duplicate() }, unlinkBase: { unlinked.append($0) })
        XCTAssertEqual(unlinked, [orphan])
        XCTAssertEqual(try early.status().st_size, 0)
        XCTAssertEqual(try kept.status().st_blocks, 0, "the unclaimed copy is punched")
        let reread = try BlockMaps(directory: StateDirectory(descriptor: stateDirectory))
        XCTAssertEqual(Array(reread.book.durable.keys), [try identity(kept)], "the drop is durable")
    }

    // MARK: The base's stamp

    /// The base written behind the member's back (same size, in place): the
    /// member's reads of shared blocks and copies of them fail with EIO, its
    /// own blocks still read, a truncate to nothing still works; a member
    /// opened anew from the book finds the change too. Before the stamp,
    /// the member read the new bytes as its own.
    func testABaseWrittenBehindTheMemberFailsItsSharedReadsWithEIO() throws {
        let dir = try directory(), stateDirectory = try directory()
        var generator = SplitMix64(seed: 77)
        let baseBytes = randomBytes(Int(4 * block), &generator)
        let base = try create("base", in: dir, bytes: baseBytes), anchor = try create("anchor", in: dir)
        let member = try identity(anchor)
        let maps = try BlockMaps(directory: StateDirectory(descriptor: stateDirectory))
        let file = try SparseMemberFile.start(member: member, anchor: try anchor.duplicate(), base: try base.duplicate(), handle: (1, []), maps: maps)
        try write(file, [1, 2, 3], at: 10)
        try file.sync()
        XCTAssertEqual(maps.book.durable[member]?.map.baseStamp, BaseStamp(try base.status()))
        XCTAssertEqual(try read(file, offset: 2 * block, count: 8), Array(baseBytes[Int(2 * block)..<Int(2 * block) + 8]))
        // Another process writes the base in place, at the same size.
        _ = try [UInt8](repeating: 0xEE, count: 100).withUnsafeBytes { try base.write($0, at: Int64(2 * block)) }
        XCTAssertThrowsError(try read(file, offset: 2 * block, count: 8)) { XCTAssertEqual($0 as? Errno, Errno.ioError) }
        XCTAssertThrowsError(try read(file, offset: 0, count: Int(2 * block))) { XCTAssertEqual($0 as? Errno, Errno.ioError) }
        XCTAssertEqual(try read(file, offset: 0, count: 13).suffix(3), [1, 2, 3], "own blocks still read")
        XCTAssertThrowsError(try [UInt8(9)].withUnsafeBytes { try file.write($0, at: 3 * block) }) { XCTAssertEqual($0 as? Errno, Errno.ioError) }
        XCTAssertThrowsError(try file.flatten()) { XCTAssertEqual($0 as? Errno, Errno.ioError) }
        // Opened anew from the journal: the stamp says the same.
        let reopened = try SparseMemberFile.open(member: member, anchor: try anchor.duplicate(), base: try base.duplicate(), maps: maps)
        XCTAssertNotNil(reopened.snapshot.baseChanged)
        XCTAssertThrowsError(try read(reopened, offset: 3 * block, count: 1)) { XCTAssertEqual($0 as? Errno, Errno.ioError) }
        try file.truncate(to: 0)
        try write(file, [4, 5], at: 0)
        XCTAssertEqual(try whole(file), [4, 5], "cut to nothing, the member shares nothing and reads again")
    }

    /// purgefs setting the base's times itself stamps the member anew
    /// (`restamp`): it reads on; a member marked by another change stays so.
    func testTheBasesOwnTimesSetByPurgefsAreStampedAnew() throws {
        let dir = try directory(), stateDirectory = try directory()
        var generator = SplitMix64(seed: 78)
        let baseBytes = randomBytes(Int(3 * block), &generator)
        let base = try create("base", in: dir, bytes: baseBytes), anchor = try create("anchor", in: dir)
        let member = try identity(anchor)
        let maps = try BlockMaps(directory: StateDirectory(descriptor: stateDirectory))
        let file = try SparseMemberFile.start(member: member, anchor: try anchor.duplicate(), base: try base.duplicate(), handle: (1, []), maps: maps)
        let before = BaseStamp(try base.status())
        try base.setTimes(access: TimeSpec.omit, modification: timespec(tv_sec: 1_000_000, tv_nsec: 5))
        let after = BaseStamp(try base.status())
        XCTAssertThrowsError(try read(file, offset: 0, count: 4), "a read while the times change is refused")
        try file.restamp(from: before, to: after)
        XCTAssertEqual(try whole(file), baseBytes)
        let reopened = try BlockMaps(directory: StateDirectory(descriptor: stateDirectory))
        XCTAssertEqual(reopened.book.durable[member]?.map.baseStamp, after, "the new stamp is durable")
        // Written behind the mount, then its times set: the mark stays.
        _ = try [UInt8](repeating: 1, count: 10).withUnsafeBytes { try base.write($0, at: 0) }
        XCTAssertThrowsError(try read(file, offset: 0, count: 4))
        let written = BaseStamp(try base.status())
        try base.setTimes(access: TimeSpec.omit, modification: timespec(tv_sec: 2_000_000, tv_nsec: 0))
        try file.restamp(from: written, to: BaseStamp(try base.status()))
        XCTAssertThrowsError(try read(file, offset: 0, count: 4), "still refused")
    }
}
