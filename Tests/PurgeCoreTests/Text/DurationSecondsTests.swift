import XCTest
import PurgeCore

final class DurationSecondsTests: XCTestCase {
    private func seconds(_ text: String) throws -> UInt64 { try DurationSeconds(parsing: text).seconds }

    private func assertRefused(_ text: String, _ expected: ValueError, line: UInt = #line) {
        XCTAssertThrowsError(try DurationSeconds(parsing: text), line: line) { error in
            XCTAssertEqual(error as? ValueError, expected, "for '\(text)'", line: line)
        }
    }

    func testUnits() throws {
        XCTAssertEqual(try seconds("90"), 90)
        XCTAssertEqual(try seconds("30s"), 30)
        XCTAssertEqual(try seconds("15m"), 900)
        XCTAssertEqual(try seconds("1h"), 3600)
        XCTAssertEqual(try seconds("1d"), 86400)
        XCTAssertEqual(try seconds("1.5h"), 5400)
        XCTAssertEqual(try seconds("1.5s"), 1)
    }

    func testRefusals() {
        assertRefused("", .empty)
        assertRefused("0", .lessThanOneSecond)
        assertRefused("0s", .lessThanOneSecond)
        assertRefused("0.5s", .lessThanOneSecond)
        assertRefused("-1h", .negative)
        assertRefused("1w", .notADuration)
        assertRefused("1H", .notADuration)
        assertRefused("h", .notADuration)
        assertRefused("1h30m", .notADuration)
        assertRefused("1 h", .notADuration)
        assertRefused("999999999999999999d", .tooLarge)
    }

    func testDescription() {
        XCTAssertEqual(DurationSeconds(seconds: 3600).description, "1h")
        XCTAssertEqual(DurationSeconds(seconds: 900).description, "15m")
        XCTAssertEqual(DurationSeconds(seconds: 90).description, "90s")
        XCTAssertEqual(DurationSeconds(seconds: 172800).description, "2d")
    }
}
