import Glibc
@testable import PurgeEngines
import XCTest

final class HumanTextTests: XCTestCase {
    func testAges() {
        let now = 1_000_000.0
        XCTAssertEqual(HumanText.age(of: now - 0.5, now: now), "now")
        XCTAssertEqual(HumanText.age(of: now + 10, now: now), "now")
        XCTAssertEqual(HumanText.age(of: now - 12.9, now: now), "12s ago")
        XCTAssertEqual(HumanText.age(of: now - 60, now: now), "1m ago")
        XCTAssertEqual(HumanText.age(of: now - 3 * 3600 - 59 * 60, now: now), "3h ago")
        XCTAssertEqual(HumanText.age(of: now - 2 * 86400, now: now), "2d ago")
        XCTAssertEqual(HumanText.age(of: 0, now: now), "never")
    }

    func testLocalTimeFormat() {
        let saved = getenv("TZ").map { String(cString: $0) }
        setenv("TZ", "UTC", 1)
        defer {
            if let saved { setenv("TZ", saved, 1) } else { unsetenv("TZ") }
            tzset()
        }
        XCTAssertEqual(HumanText.localTime(1_764_460_800 + 3723.9), "2025-11-30 01:02:03")
        XCTAssertEqual(HumanText.localTime(0), "1970-01-01 00:00:00")
    }

    func testPaddingAndCounts() {
        XCTAssertEqual(HumanText.right("ab", 4), "  ab")
        XCTAssertEqual(HumanText.left("ab", 4), "ab  ")
        XCTAssertEqual(HumanText.right("abcde", 4), "abcde")
        XCTAssertEqual(HumanText.count(1, "file"), "1 file")
        XCTAssertEqual(HumanText.count(0, "file"), "0 files")
    }
}
