import XCTest
import PurgeCore

final class SpaceThresholdParsingTests: XCTestCase {
    private func assertRefused(_ text: String, _ expected: ValueError, line: UInt = #line) {
        XCTAssertThrowsError(try SpaceThreshold(parsing: text), line: line) { error in
            XCTAssertEqual(error as? ValueError, expected, "for '\(text)'", line: line)
        }
    }

    func testPercentages() throws {
        XCTAssertEqual(try SpaceThreshold(parsing: "10%"), .percent(10))
        XCTAssertEqual(try SpaceThreshold(parsing: "12.5%"), .percent(12.5))
        XCTAssertEqual(try SpaceThreshold(parsing: "100%"), .percent(100))
        XCTAssertEqual(try SpaceThreshold(parsing: "0.01%"), .percent(0.01))
    }

    func testSizes() throws {
        XCTAssertEqual(try SpaceThreshold(parsing: "1G"), .bytes(1 << 30))
        XCTAssertEqual(try SpaceThreshold(parsing: "0"), .bytes(0))
    }

    func testRefusals() {
        assertRefused("", .empty)
        assertRefused("%", .notAThreshold)
        assertRefused("0%", .percentOutOfRange)
        assertRefused("0.0%", .percentOutOfRange)
        assertRefused("100.5%", .percentOutOfRange)
        assertRefused("101%", .percentOutOfRange)
        assertRefused("-5%", .negative)
        assertRefused("5 %", .notAThreshold)
        assertRefused("5%%", .notAThreshold)
        assertRefused("1G%", .notAThreshold)
        assertRefused("ten", .notAThreshold)
        assertRefused("1.5", .fractionOfAByte)
        assertRefused("99999999999999999999G", .aboveMaximumSize)
    }

    func testResolvingAgainstACapacity() {
        XCTAssertEqual(SpaceThreshold.percent(10).bytes(ofCapacity: 1000), 100)
        XCTAssertEqual(SpaceThreshold.percent(12.5).bytes(ofCapacity: 1 << 30), 1 << 27)
        XCTAssertEqual(SpaceThreshold.bytes(5).bytes(ofCapacity: 1000), 5)
    }

    func testDisplayText() {
        XCTAssertEqual(SpaceThreshold.percent(10).displayText, "10%")
        XCTAssertEqual(SpaceThreshold.percent(12.5).displayText, "12.5%")
        XCTAssertEqual(SpaceThreshold.bytes(1 << 30).displayText, "1 GiB")
    }
}
