import Foundation
import Glibc
import XCTest

/// `purgefs usage` on a mount with `bundle=` and its own zones: the app's
/// figure and the zones come from the mount's options (its runtime record).
final class UsageBundleTests: PurgefsCommandTestCase {
    override var mountOptions: [String] { ["capacity=64M", "bundle=other", "purgeable=caches"] }

    func testAppAndZonesFollowTheMountOptions() throws {
        let json = try object(try succeed("usage", mnt, "--json"))
        XCTAssertEqual((json["app"] as? NSNumber)?.uint64Value, 500, "bundle=other holds other/o.txt")
        let zones = try XCTUnwrap(json["zones"] as? [[String: Any]])
        XCTAssertEqual(zones.compactMap { $0["path"] as? String }, ["caches"])
        XCTAssertEqual((json["caches"] as? NSNumber)?.uint64Value, 8192 * 3)
        // Library/Caches and tmp are no zones here: they count as other data.
        XCTAssertEqual((json["other_data"] as? NSNumber)?.uint64Value, 4096 + 1000)
        let text = try succeed("usage", mnt)
        XCTAssertTrue(text.contains("# App"), text)
    }
}
