import Foundation
import Glibc
import PurgeSys
import XCTest

/// `purgefs usage`: the breakdown against the attributes it comes from.
final class UsageCommandTests: PurgefsCommandTestCase {
    private func number(_ json: [String: Any], _ key: String) -> UInt64? { (json[key] as? NSNumber)?.uint64Value }

    func testJSONFiguresEqualTheRootsAttributes() throws {
        let json = try object(try succeed("usage", mnt, "--json"))
        XCTAssertEqual(json["path"] as? String, mnt)
        XCTAssertEqual(json["mountpoint"] as? String, mnt)
        XCTAssertTrue(json["app"] is NSNull, "bundle= is not recorded: app is null")
        for name in ["size", "files", "allocated", "purgeable", "clone_savings"] {
            XCTAssertEqual(number(json, name), try attribute(name, of: mnt), name)
        }
        let device = try XCTUnwrap(json["device"] as? [String: Any])
        for name in ["capacity", "external", "container_used", "device_used", "available", "available_important",
                     "available_opportunistic", "purgeable", "purged_bytes", "purged_files"] {
            XCTAssertEqual(number(device, name), try attribute(name, of: mnt), name)
        }
        XCTAssertEqual(number(device, "device_used"), try attribute("capacity", of: mnt) - attribute("available", of: mnt))

        XCTAssertEqual(number(json, "documents"), try attribute("size", of: mnt + "/Documents"))
        XCTAssertEqual(number(json, "documents"), 20_000)
        let zones = try XCTUnwrap(json["zones"] as? [[String: Any]])
        XCTAssertEqual(zones.compactMap { $0["path"] as? String }, ["Library/Caches", "caches", "tmp"])
        for zone in zones {
            let path = mnt + "/" + (zone["path"] as? String ?? "")
            XCTAssertEqual(number(zone, "size"), try attribute("size", of: path))
            XCTAssertEqual(number(zone, "purgeable"), try attribute("purgeable", of: path))
        }
        let caches: UInt64 = 8192 * 3 + 4096 + 1000
        XCTAssertEqual(number(json, "caches"), caches)
        XCTAssertEqual(number(json, "other_data"), 500)
        XCTAssertEqual(number(json, "size"), 20_000 + caches + 500)
    }

    func testTextHasABarAndTheCategories() throws {
        let text = try succeed("usage", mnt)
        let lines = text.split(separator: "\n").map(String.init)
        let bar = try XCTUnwrap(lines.first { $0.hasPrefix("[") && $0.hasSuffix("]") }, text)
        XCTAssertTrue((42...62).contains(bar.count), bar)
        for label in ["Documents", "Caches & tmp", "Other data", "Available", "App", "not set", "Clone savings", "Capacity",
                      "Available for important use", "19.5 KiB", "64 MiB"] {
            XCTAssertTrue(text.contains(label), "\(label) in\n\(text)")
        }
    }

    func testASubtree() throws {
        let json = try object(try succeed("usage", mnt + "/caches", "--json"))
        XCTAssertEqual(number(json, "size"), try attribute("size", of: mnt + "/caches"))
        XCTAssertEqual(number(json, "caches"), 8192 * 3)
        XCTAssertEqual(number(json, "documents"), 0)
        XCTAssertEqual(number(json, "other_data"), 0)
        try assertRejected(["usage", mnt + "/Documents/report.txt"], status: 1, mentioning: ["not a directory"])
    }
}
