import Glibc
import PurgeSys
import XCTest

final class LocalTimeTests: XCTestCase {
    private func withTimeZone(_ zone: String, _ body: () throws -> Void) rethrows {
        let saved = getenv("TZ").map { String(cString: $0) }
        setenv("TZ", zone, 1)
        defer {
            if let saved { setenv("TZ", saved, 1) } else { unsetenv("TZ") }
            tzset()
        }
        try body()
    }

    func testUTC() {
        withTimeZone("UTC") {
            XCTAssertEqual(LocalTime(secondsSinceEpoch: 0), LocalTime(year: 1970, month: 1, day: 1, hour: 0, minute: 0, second: 0))
            XCTAssertEqual(LocalTime(secondsSinceEpoch: 1_764_460_800 + 3723),
                           LocalTime(year: 2025, month: 11, day: 30, hour: 1, minute: 2, second: 3))
        }
    }

    func testFollowsTheTimeZone() {
        withTimeZone("UTC-2") {
            XCTAssertEqual(LocalTime(secondsSinceEpoch: 0)?.hour, 2)
        }
    }
}
