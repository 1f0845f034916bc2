import PurgeCore
import XCTest

final class MetricsDeliveriesTests: XCTestCase {
    let june1: Int64 = 1_748_736_000  // 2025-06-01T00:00:00Z

    func testDueDaysAreTheCompleteOnesAfterTheLastDelivered() {
        let days = (0..<3).map { MetricsDay(start: june1 + Int64($0) * 86400, entries: [MetricsSample(start: 0, time: june1 + Int64($0) * 86400 + 60)]) }
        let now = june1 + 2 * 86400 + 100  // the third day is under way
        XCTAssertEqual(MetricsDeliveries.due(days, after: nil, now: now).map(\.start), [june1, june1 + 86400])
        XCTAssertEqual(MetricsDeliveries.due(days, after: june1, now: now).map(\.start), [june1 + 86400])
        XCTAssertEqual(MetricsDeliveries.due(days, after: june1 + 86400, now: now), [])
    }

    func testTheBookRoundTripsAndRefusesAMalformedLine() {
        var book = MetricsDeliveries()
        book.apps["Notes"] = .init(deliveredThrough: june1, servedRequest: 3)
        book.apps[MetricsDeliveries.name("odd\tname")] = .init()
        let decoded = MetricsDeliveries(decoding: book.encoded)
        XCTAssertEqual(decoded, book)
        XCTAssertEqual(decoded?.apps["odd_name"], .init(deliveredThrough: nil, servedRequest: 0))
        XCTAssertNil(MetricsDeliveries(decoding: "Notes\tsoon\t1\n"))
        XCTAssertNil(MetricsDeliveries(decoding: "Notes\t1\n"))
        XCTAssertEqual(MetricsDeliveries.request(decoding: " 7\n"), 7)
        XCTAssertEqual(MetricsDeliveries.request(decoding: "seven"), 0)
    }
}
