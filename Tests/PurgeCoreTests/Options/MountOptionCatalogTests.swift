import XCTest
import PurgeCore

/// The catalog drives `purgefs mount --help`: everything it lists must parse.
final class MountOptionCatalogTests: XCTestCase {
    private let sampleValues = [
        "SIZE": "1G", "SIZE|N%": "15%", "P1:P2": "zone", "DIR": "/srv/elsewhere", "DIR|rclone:REMOTE:PATH": "rclone:s3:bucket/app", "P": "App", "DURATION": "30s", "FILE": "/etc/app.rules",
        "NAME": "phone", "quota|lru": "lru",
        "on|off": "on", "on|pinned|off": "pinned",
    ]

    func testEveryPurgefsOptionInTheCatalogParses() throws {
        for entry in MountOptionCatalog.purgefsOptions {
            let item: String
            if let valueName = entry.valueName {
                let value = try XCTUnwrap(sampleValues[valueName], "no sample for \(valueName)")
                item = "\(entry.name)=\(value)"
            } else {
                item = entry.name
            }
            // The shared device's own options need the device.
            let device = entry.name.hasPrefix("device_") || entry.name == "cache_quota" ? ["device=phone"] : []
            XCTAssertNoThrow(try MountOptions.parse(device + [item]), item)
        }
    }

    func testCatalogMatchesSpecTable() {
        XCTAssertEqual(MountOptionCatalog.purgefsOptions.map(\.name), [
            "capacity", "external", "low", "high", "purgeable", "cloud", "ubiquitous", "state", "bundle",
            "metrics_interval", "optimize_storage", "crashable", "record", "faults", "device", "device_policy", "cache_quota", "passthrough", "uring",
        ], "SPEC's tables, crashable (the power-loss simulation's switch), record (explore's), and passthrough (kernel passthrough's), README")
        XCTAssertEqual(try MountOptions.parse(["record=/tmp/r"]).record, "/tmp/r")
        XCTAssertThrowsError(try MountOptions.parse(["record=relative"]))
        XCTAssertTrue(try MountOptions.parse(["crashable"]).crashable)
        XCTAssertFalse(try MountOptions.parse([]).crashable)
    }

    func testEveryPassThroughAndIgnoredWordParses() {
        for flag in MountOptionCatalog.passThroughFlags where flag != "allow_root" {
            XCTAssertEqual(try MountOptions.parse([flag]).fuseOptions, [flag])
        }
        XCTAssertEqual(try MountOptions.parse(["allow_root"]).fuseOptions, ["allow_root"])
        for name in MountOptionCatalog.passThroughValueOptions {
            let item = name == "subtype" ? "subtype=purgefs" : "\(name)=1"
            XCTAssertEqual(try MountOptions.parse([item]).fuseOptions, [item])
        }
        for word in MountOptionCatalog.ignoredWords {
            XCTAssertEqual(try MountOptions.parse([word]).fuseOptions, [])
        }
    }
}
