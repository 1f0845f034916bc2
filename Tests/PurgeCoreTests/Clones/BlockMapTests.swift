@testable import PurgeCore
import XCTest

/// A sparse member's block map: block sets, splitting a byte range into own
/// and shared pieces, and what writes and truncates do to it.
final class BlockMapTests: XCTestCase {
    let base = EntryID(device: 1, inode: 50)
    let block = BlockMap.blockSize

    // MARK: BlockRanges

    func testBlockRangesMergeAdjacentAndOverlappingAndSplitOnRemove() {
        var set = BlockRanges()
        set.insert(5..<7)
        set.insert(1..<2)
        set.insert(7..<9)
        XCTAssertEqual(set.ranges, [1..<2, 5..<9])
        set.insert(2..<5)
        XCTAssertEqual(set.ranges, [1..<9])
        set.remove(3..<4)
        XCTAssertEqual(set.ranges, [1..<3, 4..<9])
        XCTAssertEqual(set.count, 7)
        XCTAssertTrue(set.contains(4))
        XCTAssertFalse(set.contains(3))
        XCTAssertFalse(set.contains(9))
        XCTAssertEqual(set.gaps(in: 0..<10), [0..<1, 3..<4, 9..<10])
        XCTAssertEqual(set.clamped(to: 2..<5).ranges, [2..<3, 4..<5])
        XCTAssertEqual(set.subtracting(BlockRanges([0..<2, 8..<20])).ranges, [2..<3, 4..<8])
    }

    func testBlockRangesAgreeWithASetUnderRandomChanges() {
        var generator = SplitMix64(seed: 7)
        var set = BlockRanges(), model = Set<UInt64>()
        for _ in 0..<2000 {
            let start = generator.next() % 200, length = generator.next() % 12
            let range = start..<(start + length)
            if generator.next() % 3 == 0 {
                set.remove(range)
                model.subtract(range)
            } else {
                set.insert(range)
                model.formUnion(range)
            }
        }
        XCTAssertEqual(set.count, UInt64(model.count))
        for block in 0..<UInt64(220) { XCTAssertEqual(set.contains(block), model.contains(block), "block \(block)") }
        for (a, b) in zip(set.ranges, set.ranges.dropFirst()) { XCTAssertLessThan(a.upperBound, b.lowerBound, "disjoint, not adjacent") }
    }

    // MARK: Pieces

    func testAMapSharesWholeBlocksOnlyAndSplitsReadsIntoOwnAndSharedPieces() {
        var map = BlockMap(base: base, sharedLength: 10 * block + 100)
        XCTAssertEqual(map.sharedLength, 10 * block, "a partial last block is never shared")
        XCTAssertEqual(map.pieces(offset: 0, length: 3 * block), [.init(offset: 0, length: 3 * block, shared: true)])
        map.makeOwn(2..<4)
        XCTAssertEqual(map.sharedBlockCount, 8)
        XCTAssertEqual(map.pieces(offset: block + 10, length: 4 * block), [
            .init(offset: block + 10, length: block - 10, shared: true),
            .init(offset: 2 * block, length: 2 * block, shared: false),
            .init(offset: 4 * block, length: block + 10, shared: true),
        ])
        // Across sharedLength: own past it, whatever the size.
        XCTAssertEqual(map.pieces(offset: 9 * block, length: 3 * block), [
            .init(offset: 9 * block, length: block, shared: true),
            .init(offset: 10 * block, length: 2 * block, shared: false),
        ])
        XCTAssertEqual(map.pieces(offset: 20 * block, length: 5), [.init(offset: 20 * block, length: 5, shared: false)])
        XCTAssertEqual(map.pieces(offset: 5, length: 0), [])
        // Own pieces are merged across own blocks and past sharedLength.
        map.makeOwn(9..<10)
        XCTAssertEqual(map.pieces(offset: 9 * block, length: 2 * block), [.init(offset: 9 * block, length: 2 * block, shared: false)])
    }

    func testAWriteCopiesOnlyTheSharedBlocksItTouches() {
        var map = BlockMap(base: base, sharedLength: 8 * block)
        XCTAssertEqual(map.sharedBlocks(offset: block - 1, length: 2), [0..<2])
        XCTAssertEqual(map.sharedBlocks(offset: 4096, length: 4096), [0..<1])
        map.makeOwn(1..<2)
        XCTAssertEqual(map.sharedBlocks(offset: 0, length: 4 * block), [0..<1, 2..<4])
        XCTAssertEqual(map.sharedBlocks(offset: 7 * block, length: 5 * block), [7..<8], "nothing past sharedLength is copied")
        XCTAssertEqual(map.sharedBlocks(offset: 8 * block, length: 1), [])
        XCTAssertEqual(map.makeOwn(0..<20), [0..<1, 2..<8], "clamped to sharedLength")
        XCTAssertTrue(map.sharesNothing)
    }

    func testTruncateDownLowersSharedLengthAndTruncateUpChangesNothing() {
        var map = BlockMap(base: base, sharedLength: 8 * block)
        map.makeOwn(6..<8)
        XCTAssertNil(map.blockToCopy(truncatingTo: 9 * block), "growing copies nothing")
        XCTAssertFalse(map.truncate(to: 9 * block))
        XCTAssertEqual(map.sharedLength, 8 * block)
        XCTAssertEqual(map.blockToCopy(truncatingTo: 3 * block + 7), 3, "the shared block the new end falls in")
        XCTAssertNil(map.blockToCopy(truncatingTo: 3 * block), "a block boundary copies nothing")
        XCTAssertNil(map.blockToCopy(truncatingTo: 6 * block + 1), "an own block is not copied")
        XCTAssertTrue(map.truncate(to: 6 * block + 1))
        XCTAssertEqual(map.sharedLength, 6 * block)
        XCTAssertEqual(map.own, BlockRanges(), "own blocks past sharedLength are dropped: own anyway")
        map.makeOwn(3..<4)
        XCTAssertTrue(map.truncate(to: 3 * block + 7))
        XCTAssertEqual(map.sharedLength, 3 * block)
        XCTAssertTrue(map.isOwn(3))
        XCTAssertFalse(map.isOwn(2))
        XCTAssertTrue(map.truncate(to: 0))
        XCTAssertTrue(map.sharesNothing)
    }

    /// Pieces against a block-by-block model over random writes and truncates.
    func testPiecesAgreeWithABlockModel() {
        var generator = SplitMix64(seed: 11)
        var map = BlockMap(base: base, sharedLength: 40 * block)
        var shared = Array(repeating: true, count: 40)
        for _ in 0..<500 {
            let offset = generator.next() % (44 * block), length = generator.next() % (3 * block)
            switch generator.next() % 5 {
            case 0:
                let size = generator.next() % (44 * block)
                if let copy = map.blockToCopy(truncatingTo: size) {
                    map.makeOwn(copy..<copy + 1)
                    shared[Int(copy)] = false
                }
                map.truncate(to: size)
                for index in shared.indices where UInt64(index) * block >= map.sharedLength { shared[index] = false }
            default:
                for range in map.sharedBlocks(offset: offset, length: length) {
                    map.makeOwn(range)
                    for index in range { shared[Int(index)] = false }
                }
            }
            var expected: [Bool] = []
            for byteBlock in BlockMap.blocks(offset: offset, length: length) {
                expected.append(byteBlock < 40 && shared[Int(byteBlock)])
            }
            // Pieces change kind only at block boundaries: each block is in one piece.
            let got = map.pieces(offset: offset, length: length).flatMap { piece in
                BlockMap.blocks(offset: piece.offset, length: piece.length).map { _ in piece.shared }
            }
            XCTAssertEqual(got, expected)
            XCTAssertEqual(map.pieces(offset: offset, length: length).reduce(0) { $0 + $1.length }, length)
        }
    }
}
