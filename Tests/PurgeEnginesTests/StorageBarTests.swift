@testable import PurgeEngines
import XCTest

final class StorageBarTests: XCTestCase {
    func testCellsAreProportionalAndFillTheWidth() {
        XCTAssertEqual(StorageBar.cells(for: [50, 25, 25], width: 40), [20, 10, 10])
        XCTAssertEqual(StorageBar.cells(for: [1, 1, 1], width: 50).reduce(0, +), 50)
        XCTAssertEqual(StorageBar.cells(for: [0, 0], width: 50), [0, 0])
        XCTAssertEqual(StorageBar.cells(for: [UInt64.max, UInt64.max], width: 50), [25, 25])
    }

    func testSmallSegmentsStillShow() {
        let cells = StorageBar.cells(for: [1, 0, 1_000_000_000, 3], width: 50)
        XCTAssertEqual(cells, [1, 0, 48, 1])
    }

    func testRandomAmountsAlwaysFillTheWidth() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let amounts = (0..<Int.random(in: 1...6, using: &generator)).map { _ in
                Bool.random(using: &generator) ? 0 : UInt64.random(in: 0...(1 << 40), using: &generator)
            }
            let cells = StorageBar.cells(for: amounts, width: 50)
            if amounts.allSatisfy({ $0 == 0 }) { XCTAssertEqual(cells.reduce(0, +), 0); continue }
            XCTAssertEqual(cells.reduce(0, +), 50, "\(amounts)")
            for (amount, count) in zip(amounts, cells) {
                XCTAssertEqual(amount == 0, count == 0, "\(amounts) → \(cells)")
            }
        }
    }

    func testBarAndLegend() {
        let bar = StorageBar(segments: [.init(glyph: "#", label: "Documents", bytes: 3), .init(glyph: ".", label: "Available", bytes: 1)],
                             width: 8)
        XCTAssertEqual(bar.bar, "[######..]")
        XCTAssertEqual(bar.legend(), ["# Documents  . Available"])
        XCTAssertEqual(bar.legend(lineWidth: 15), ["# Documents", ". Available"])
        XCTAssertEqual(StorageBar(segments: [.init(glyph: "#", label: "x", bytes: 0)], width: 3).bar, "[   ]")
    }
}
