import PurgeCore
import XCTest

/// What a change may allocate: holes nothing, data its blocks.
final class AllocationEstimateTests: XCTestCase {
    let block = AllocationEstimate.blockSize

    func estimate(_ offset: UInt64, _ length: UInt64, size: UInt64, allocated: UInt64? = nil, hole: Bool = false,
                  asked: inout [Range<UInt64>]) -> UInt64 {
        var seen: [Range<UInt64>] = []
        let need = AllocationEstimate.write(offset: offset, length: length, size: size,
                                            allocated: allocated ?? (size + block - 1) / block * block,
                                            holeWithin: { seen.append($0); return hole })
        asked = seen
        return need
    }

    func testAppendingAsksForTheNewBlocks() {
        var asked: [Range<UInt64>] = []
        XCTAssertEqual(estimate(0, 1, size: 0, asked: &asked), block)
        XCTAssertEqual(estimate(8192, 5000, size: 8192, asked: &asked), 2 * block)
        // The file's last, partly filled block is there already.
        XCTAssertEqual(estimate(100, 200, size: 100, asked: &asked), 0)
        XCTAssertEqual(estimate(100, 5000, size: 100, asked: &asked), block)
        XCTAssertEqual(asked, [], "a file without holes is never asked about")
    }

    func testAWritePastTheEndAsksForItsBlocksNotTheHole() {
        var asked: [Range<UInt64>] = []
        XCTAssertEqual(estimate(5 << 30, 8192, size: 0, asked: &asked), 2 * block)
        XCTAssertEqual(estimate((5 << 30) + 10, 8192, size: 4096, asked: &asked), 3 * block, "unaligned: three blocks touched")
        XCTAssertEqual(estimate(UInt64.max - 10, 100, size: 0, asked: &asked), 1 * block, "clamped at the largest offset")
    }

    func testOverwritingDataAsksNothing() {
        var asked: [Range<UInt64>] = []
        XCTAssertEqual(estimate(0, 1 << 20, size: 4 << 20, asked: &asked), 0)
        XCTAssertEqual(asked, [])
        XCTAssertEqual(estimate(0, 0, size: 0, asked: &asked), 0, "nothing written")
    }

    func testAWriteIntoAHoleAsksForTheBlocksItCovers() {
        var asked: [Range<UInt64>] = []
        // A 1 GiB file with nothing allocated (truncate -s 1G).
        XCTAssertEqual(estimate(4096, 1 << 20, size: 1 << 30, allocated: 0, hole: true, asked: &asked), 1 << 20)
        XCTAssertEqual(asked, [4096 ..< 4096 + (1 << 20)])
        // The same range found to be data: nothing.
        XCTAssertEqual(estimate(4096, 1 << 20, size: 1 << 30, allocated: 0, hole: false, asked: &asked), 0)
        // Straddling the end: the hole part inside, the blocks past the end.
        XCTAssertEqual(estimate((1 << 30) - 4096, 3 * block, size: 1 << 30, allocated: 0, hole: true, asked: &asked), 3 * block)
        XCTAssertEqual(asked, [((1 << 30) - 4096) ..< (1 << 30)])
    }
}
