@testable import PurgeCore
import XCTest

/// The check over maps, anchors and base links, and the repairs a mount
/// makes after replaying the journal.
final class BlockShareCheckTests: XCTestCase {
    typealias Anchor = BlockShareCheck.Anchor
    let block = BlockMap.blockSize
    let one = EntryID(device: 7, inode: 1001), two = EntryID(device: 7, inode: 1002)
    let baseA = EntryID(device: 7, inode: 100), baseB = EntryID(device: 7, inode: 200)

    /// Member `one` on `baseA`, 8 blocks shared but for own blocks 2..<4.
    func map() -> BlockMap {
        var map = BlockMap(base: baseA, sharedLength: 8 * block)
        map.makeOwn(2..<4)
        return map
    }

    func testAConsistentStateHasNoFindings() {
        // Own blocks are data; past sharedLength anything goes.
        let anchor = Anchor(size: 10 * block + 5, data: [2 * block..<3 * block, 3 * block..<4 * block, 9 * block..<9 * block + 10])
        XCTAssertEqual(BlockShareCheck.findings(maps: [one: map()], anchors: [one: anchor], baseLinks: [baseA]), [])
    }

    func testTheCheckFindsAnUnreferencedBlockAndADanglingBase() {
        let anchor = Anchor(size: 8 * block, data: [2 * block..<4 * block, 5 * block + 4096..<5 * block + 8192])
        XCTAssertEqual(BlockShareCheck.findings(maps: [one: map()], anchors: [one: anchor], baseLinks: [baseB]), [
            .danglingBase(member: one, base: baseA),
            .sharedBlocksWithData(member: one, blocks: 5..<6),
            .unreferencedBase(base: baseB),
        ])
    }

    func testTheCheckFindsOwnBlocksWithoutDataAMissingAnchorAndAShortAnchor() {
        let partly = Anchor(size: 4 * block, data: [2 * block..<3 * block + 100])
        XCTAssertEqual(BlockShareCheck.findings(maps: [one: map(), two: map()], anchors: [one: partly], baseLinks: [baseA]), [
            .sharedPastSize(member: one, sharedLength: 8 * block, size: 4 * block),
            .ownBlocksWithoutData(member: one, blocks: 3..<4),
            .missingAnchor(member: two),
        ])
    }

    func testReplayDropsPunchesAndUnlinksSoTheCheckFindsNothing() throws {
        var book = BlockMapBook()
        book.record(.start(member: one, base: baseA, sharedLength: 8 * block, handleType: 1, handle: [1]))
        book.record(.own(member: one, blocks: 2..<4))
        book.record(.start(member: two, base: baseB, sharedLength: 8 * block, handleType: 1, handle: [2]))
        let three = EntryID(device: 7, inode: 1003), four = EntryID(device: 7, inode: 1004)
        book.record(.start(member: three, base: baseB, sharedLength: 8 * block, handleType: 1, handle: [3]))
        book.record(.start(member: four, base: baseA, sharedLength: 8 * block, handleType: 1, handle: [4]))
        _ = book.takeChanges()
        let orphanBase = EntryID(device: 7, inode: 300)
        let anchors: [EntryID: Anchor] = [
            // A copy of block 6 whose record never became durable.
            one: Anchor(size: 8 * block, data: [2 * block..<4 * block, 6 * block..<7 * block]),
            // Truncated behind the mount to 5 blocks and a bit.
            two: Anchor(size: 5 * block + 3, data: [4 * block..<5 * block + 3]),
            // `three` is gone; `four` is still a linked member (killed before its rename).
            four: Anchor(size: 8 * block, data: [0..<block]),
        ]
        let repairs = BlockShareCheck.replay(book: book, anchors: anchors, linkedMembers: [four], baseLinks: [baseA, baseB, orphanBase])
        XCTAssertEqual(repairs.records, [
            .sharedLength(member: two, length: 5 * block), .drop(member: three), .drop(member: four),
        ])
        XCTAssertEqual(repairs.emptied, [four])
        XCTAssertEqual(repairs.punches, [one: [6..<7], two: [4..<5]])
        XCTAssertEqual(repairs.unlinkBases, [orphanBase])

        // Apply the repairs as the I/O layer would, then check.
        try book.applyDurable(repairs.records)
        var repaired = anchors
        repaired[one] = Anchor(size: 8 * block, data: [2 * block..<4 * block])
        repaired[two] = Anchor(size: 5 * block + 3, data: [5 * block..<5 * block + 3])
        repaired[four] = nil
        let findings = BlockShareCheck.findings(
            maps: book.durable.mapValues(\.map), anchors: repaired, baseLinks: [baseA, baseB])
        XCTAssertEqual(findings, [])
        XCTAssertTrue(BlockShareCheck.replay(book: book, anchors: repaired, linkedMembers: [], baseLinks: [baseA, baseB]).isEmpty)
    }

    func testAnAnchorsDataBlocksRoundOutwardAndWholeBlocksInward() {
        let anchor = Anchor(size: 10 * block, data: [block + 1..<2 * block, 2 * block..<4 * block - 1, 6 * block..<8 * block])
        XCTAssertEqual(anchor.data, [block + 1..<4 * block - 1, 6 * block..<8 * block], "touching ranges merge")
        XCTAssertEqual(anchor.blocksWithData.ranges, [1..<4, 6..<8])
        XCTAssertEqual(anchor.wholeDataBlocks.ranges, [2..<3, 6..<8])
    }

    // MARK: The base's stamp

    /// A base not as its map stamped it is found (its member's shared
    /// blocks then fail with EIO); replay mends nothing of it, and stamps a
    /// map journaled before stamps with its base as it is now.
    func testABaseChangedSinceItsStampIsFoundAndAnUnstampedMapIsStamped() throws {
        let stamped = BaseStamp(size: 8 * block, modifiedSeconds: 100, modifiedNanoseconds: 5)
        let written = BaseStamp(size: 8 * block, modifiedSeconds: 200, modifiedNanoseconds: 0)
        var changed = map()
        changed.baseStamp = stamped
        let anchor = Anchor(size: 8 * block, data: [2 * block..<4 * block])
        XCTAssertEqual(
            BlockShareCheck.findings(maps: [one: changed], anchors: [one: anchor], baseLinks: [baseA], baseStamps: [baseA: stamped]), [])
        XCTAssertEqual(
            BlockShareCheck.findings(maps: [one: changed], anchors: [one: anchor], baseLinks: [baseA], baseStamps: [baseA: written]),
            [.baseChanged(member: one, base: baseA, stamped: stamped, now: written)])
        var book = BlockMapBook()
        try book.applyDurable([
            .start(member: one, base: baseA, sharedLength: 8 * block, handleType: 1, handle: [1], stamp: stamped),
            .start(member: two, base: baseA, sharedLength: 8 * block, handleType: 1, handle: [2]),
        ])
        let repairs = BlockShareCheck.replay(
            book: book, anchors: [one: Anchor(size: 8 * block, data: []), two: Anchor(size: 8 * block, data: [])], linkedMembers: [], baseLinks: [baseA],
            baseStamps: [baseA: written])
        XCTAssertEqual(repairs.records, [.stamp(member: two, stamp: written)], "only the unstamped map is stamped")
        try book.applyDurable(repairs.records)
        XCTAssertEqual(
            BlockShareCheck.findings(
                maps: book.durable.mapValues(\.map), anchors: [one: Anchor(size: 8 * block, data: []), two: Anchor(size: 8 * block, data: [])],
                baseLinks: [baseA],
                baseStamps: [baseA: written]),
            [.baseChanged(member: one, base: baseA, stamped: stamped, now: written)])
    }
}
