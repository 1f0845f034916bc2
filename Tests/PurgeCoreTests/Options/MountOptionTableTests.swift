import XCTest
import PurgeCore

/// The option table is the only list of purgefs's mount options: one entry
/// per field of `MountOptions`, each with its help, and what `optionItems`
/// writes `parse` reads back to the same options.
final class MountOptionTableTests: XCTestCase {
    /// A value for each placeholder, away from every default.
    private let samples = [
        "SIZE": "1G", "SIZE|N%": "15%", "P1:P2": "zone", "DIR": "/srv/elsewhere",
        "DIR|rclone:REMOTE:PATH": "rclone:s3:bucket/app", "P": "App", "DURATION": "30s", "FILE": "/etc/app.rules",
        "NAME": "phone", "quota|lru": "lru", "on|off": "off", "on|pinned|off": "off",
    ]

    /// The stored properties of `MountOptions` whose values differ between two options.
    private func changedFields(_ a: MountOptions, _ b: MountOptions) -> [String] {
        zip(Mirror(reflecting: a).children, Mirror(reflecting: b).children)
            .filter { String(describing: $0.value) != String(describing: $1.value) }
            .compactMap { $0.0.label }
    }

    func testOneEntryPerOptionWithHelpAndPlaceholder() throws {
        let entries = MountOptionCatalog.purgefsOptions
        XCTAssertEqual(Set(entries.map(\.name)).count, entries.count, "each name once")
        XCTAssertEqual(Set(entries.map(\.field)).count, entries.count, "each field set by one entry")
        var covered: Set<String> = []
        for entry in entries {
            XCTAssertFalse(entry.summary.isEmpty, "\(entry.name) has help")
            XCTAssertFalse(entry.defaultText.isEmpty, "\(entry.name) has a default")
            XCTAssertEqual(entry.name, MountOptionCatalog.name(of: entry.field.keyPath))
            let item: String
            if let valueName = entry.valueName {
                XCTAssertFalse(valueName.isEmpty, "\(entry.name) has a placeholder")
                XCTAssertEqual(entry.term, "\(entry.name)=\(valueName)")
                item = "\(entry.name)=\(try XCTUnwrap(samples[valueName], "no sample for \(valueName)"))"
                XCTAssertThrowsError(try MountOptions.parse([entry.name]), "\(entry.name) needs a value")
            } else {
                XCTAssertEqual(entry.term, entry.name)
                item = entry.name
                XCTAssertThrowsError(try MountOptions.parse(["\(entry.name)=1"]), "\(entry.name) takes no value")
            }
            // Reading the item changes exactly one field besides `given`, and records that field as given.
            var options = MountOptions()
            try entry.apply(item.contains("=") ? String(item.drop { $0 != "=" }.dropFirst()) : nil, to: &options)
            let changed = changedFields(MountOptions(), options)
            XCTAssertEqual(changed.count, 1, "\(item) sets one field: \(changed)")
            covered.formUnion(changed)
            let parsed = try MountOptions.parse(
                (entry.name == "device_policy" || entry.name == "cache_quota" ? ["device=phone"] : []) + [item])
            XCTAssertTrue(parsed.isGiven(entry.field.keyPath), "\(item) is given")
        }
        let fields = Set(Mirror(reflecting: MountOptions()).children.compactMap(\.label))
        XCTAssertEqual(fields.subtracting(covered), ["given", "fuseOptions"],
                       "every field of MountOptions but given and fuseOptions is set by an entry of the table")
    }

    func testParseOfPrintedOptionsRoundTrips() throws {
        let lists: [[String]] = [
            [],
            ["capacity=1G,external=100M,low=64M,high=25%,purgeable=./cache//x/:tmp",
             "cloud=/srv/cloud/,ubiquitous=Docs:Shared/iCloud,state=/var/lib/purgefs/app",
             "bundle=App.app,metrics_interval=15m,optimize_storage,passthrough=on,uring=off"],
            ["purgeable=,ubiquitous=", "crashable,record=/srv/rec,faults=/etc/rules", "allow_other,ro,fsname=a\\,b"],
            ["device=phone,device_policy=lru,cache_quota=512M,low=12.5%,high=1.5G", "cloud=rclone:my remote:a\\,b/c"],
            ["low=10%", "uring=pinned", "passthrough=off", "external=0"],  // given, though each is the default
        ]
        for list in lists {
            let options = try MountOptions.parse(list)
            let printed = options.optionItems
            XCTAssertEqual(try MountOptions.parse([OptionList.joined(printed)]), options, "\(list) printed as \(printed)")
            XCTAssertEqual(try MountOptions.parse(printed.map { OptionList.joined([$0]) }), options, "\(printed)")
        }
        XCTAssertEqual(try MountOptions.parse([]).optionItems, [], "defaults print as nothing")
        XCTAssertEqual(try MountOptions.parse(["passthrough=off"]).optionItems, ["passthrough=off"], "a given default prints")
        XCTAssertEqual(try MountOptions.parse(["high=30%,capacity=2G,ro"]).optionItems, ["capacity=2147483648", "high=30%", "ro"],
                       "in the table's order, then the pass-through options")
    }
}
