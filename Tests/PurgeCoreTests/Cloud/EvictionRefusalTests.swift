import PurgeCore
import XCTest

/// The reasons `user.purgefs.evictable` answers.
final class EvictionRefusalTests: XCTestCase {
    func testEvictionRefusalsFitAnAttributeProbe() {
        for refusal in EvictionRefusal.allCases { XCTAssertLessThanOrEqual(refusal.rawValue.utf8.count, 20) }
        XCTAssertEqual(Set(EvictionRefusal.allCases.map(\.rawValue)).count, EvictionRefusal.allCases.count)
        XCTAssertNil(EvictionRefusal(rawValue: EvictionRefusal.evictableValue))
        XCTAssertNil(EvictionRefusal(rawValue: EvictionRefusal.evictedValue))
    }
}
