import PurgeCore
import XCTest

final class PurgeAttributeTests: XCTestCase {
    func testNamesOutsideTheNamespacePassThrough() {
        XCTAssertEqual(PurgeAttribute.parse("user.mine"), .foreign)
        XCTAssertEqual(PurgeAttribute.parse("security.selinux"), .foreign)
        XCTAssertEqual(PurgeAttribute.parse("user.purgefsx"), .foreign)
    }

    func testUnknownNamesInsideTheNamespace() {
        XCTAssertEqual(PurgeAttribute.parse("user.purgefs.bogus"), .unknown)
        XCTAssertEqual(PurgeAttribute.parse("user.purgefs."), .unknown)
        XCTAssertEqual(PurgeAttribute.parse("user.purgefs.SIZE"), .unknown)
    }

    func testEverySpecNameParses() {
        let spec = ["size", "files", "allocated", "purgeable", "clone_savings", "capacity", "external", "available",
                    "available_important", "available_opportunistic", "purged_bytes", "purged_files", "purge",
                    "pinned", "group", "tombstone", "content_id", "last_used", "shared", "ubiquitous", "uploaded",
                    "download_status", "evict", "download"]
        // Beyond the SPEC's table: why `evict` would refuse now (README, Cloud tier);
        // the fault rules' control channel (README, Fault rules).
        let own = ["evictable", "faults", "cloud"]
        for name in spec + own {
            guard case .known(let attribute) = PurgeAttribute.parse("user.purgefs." + name) else {
                return XCTFail("\(name) does not parse")
            }
            XCTAssertEqual(attribute.fullName, "user.purgefs." + name)
        }
        XCTAssertTrue(PurgeAttribute.evictable.isReadable(on: .file))
        XCTAssertFalse(PurgeAttribute.evictable.isReadable(on: .directory))
        XCTAssertFalse(PurgeAttribute.evictable.isWritable(on: .file))
        // purgefs's own, beside SPEC's: the figures space and usage show, and those purgefs run and PurgeTesting read.
        let figures = ["container_used", "device_used", "device_name", "device_containers", "device_containers_used",
                       "device_purgeable", "device_quota", "enospc", "peak_used", "monitor_rounds",
                       "transport"]  // how requests reach the daemon (SPEC, third round)
        for name in figures {
            guard case .known(let attribute) = PurgeAttribute.parse("user.purgefs." + name) else {
                return XCTFail("\(name) does not parse")
            }
            XCTAssertTrue(attribute.isReadable(on: .root))
            XCTAssertFalse(attribute.isReadable(on: .directory))
            XCTAssertFalse(attribute.isWritable(on: .root))
        }
        // The power-loss simulation's control (README, Power-loss simulation), on the root only.
        let crash = ["crash", "last_crash"]
        for name in crash {
            guard case .known(let attribute) = PurgeAttribute.parse("user.purgefs." + name) else {
                return XCTFail("\(name) does not parse")
            }
            XCTAssertTrue(attribute.isReadable(on: .root))
            XCTAssertFalse(attribute.isReadable(on: .directory))
        }
        XCTAssertTrue(PurgeAttribute.crash.isWritable(on: .root) && PurgeAttribute.crash.isControl)
        XCTAssertFalse(PurgeAttribute.crash.isWritable(on: .directory))
        XCTAssertFalse(PurgeAttribute.lastCrash.isWritable(on: .root))
        // The app's side (SPEC, third round): a flag like pinned, and a sample on request.
        XCTAssertEqual(PurgeAttribute.parse("user.purgefs.excluded_from_backup"), .known(.excludedFromBackup))
        XCTAssertTrue(PurgeAttribute.excludedFromBackup.isReadable(on: .file) && PurgeAttribute.excludedFromBackup.isWritable(on: .directory))
        XCTAssertFalse(PurgeAttribute.excludedFromBackup.isControl)
        XCTAssertEqual(PurgeAttribute.parse("user.purgefs.metrics_sample"), .known(.metricsSample))
        XCTAssertTrue(PurgeAttribute.metricsSample.isWritable(on: .root))
        XCTAssertFalse(PurgeAttribute.metricsSample.isReadable(on: .root) || PurgeAttribute.metricsSample.isWritable(on: .directory))
        let app = ["excluded_from_backup", "metrics_sample"]
        // What the container holds once unmounted (SPEC, purgefs flatten): a file's flat (read-only), the
        // root's count of files that are not, and the write that flattens one.
        let flattening = ["flat", "not_flat", "flatten"]
        XCTAssertEqual(flattening.map { PurgeAttribute.parse("user.purgefs." + $0) }, [.known(.flat), .known(.notFlat), .known(.flatten)])
        XCTAssertTrue(PurgeAttribute.flat.isReadable(on: .file))
        XCTAssertFalse(PurgeAttribute.flat.isReadable(on: .directory) || PurgeAttribute.flat.isWritable(on: .file))
        XCTAssertTrue(PurgeAttribute.notFlat.isReadable(on: .root))
        XCTAssertFalse(PurgeAttribute.notFlat.isReadable(on: .directory) || PurgeAttribute.notFlat.isWritable(on: .root))
        XCTAssertTrue(PurgeAttribute.flatten.isWritable(on: .file))
        XCTAssertFalse(PurgeAttribute.flatten.isReadable(on: .file) || PurgeAttribute.flatten.isWritable(on: .directory)
                       || PurgeAttribute.flatten.isControl)
        XCTAssertEqual(spec.count + own.count + figures.count + crash.count + app.count + flattening.count,
                       PurgeAttribute.allCases.count)
    }

    func testWhereAttributesApply() {
        XCTAssertTrue(PurgeAttribute.size.isReadable(on: .file))
        XCTAssertTrue(PurgeAttribute.files.isReadable(on: .directory))
        XCTAssertFalse(PurgeAttribute.files.isReadable(on: .file))
        XCTAssertTrue(PurgeAttribute.capacity.isReadable(on: .root))
        XCTAssertFalse(PurgeAttribute.capacity.isReadable(on: .directory))
        XCTAssertFalse(PurgeAttribute.purge.isReadable(on: .root))
        XCTAssertTrue(PurgeAttribute.purge.isWritable(on: .root))
        XCTAssertFalse(PurgeAttribute.size.isWritable(on: .file))
        XCTAssertFalse(PurgeAttribute.lastUsed.isReadable(on: .directory))
        XCTAssertFalse(PurgeAttribute.size.isReadable(on: .other))
        XCTAssertTrue(PurgeAttribute.capacity.isControl)
        XCTAssertFalse(PurgeAttribute.pinned.isControl)
    }

    func testFlagValues() {
        XCTAssertEqual(PurgeAttribute.parseFlag(Array("1".utf8)), true)
        XCTAssertEqual(PurgeAttribute.parseFlag(Array("0\n".utf8)), false)
        XCTAssertNil(PurgeAttribute.parseFlag(Array("yes".utf8)))
        XCTAssertNil(PurgeAttribute.parseFlag(Array("11".utf8)))
        XCTAssertNil(PurgeAttribute.parseFlag([]))
    }
}
