import PurgeCore
import XCTest

/// The device's one rule (`CapacityModel+Rule`), which the mount options,
/// `purgefs space` and setfattr on the root all apply.
final class DeviceRuleTests: XCTestCase {
    let mib: UInt64 = 1 << 20

    func assertRefused(_ model: CapacityModel, deviceSize: UInt64? = nil, _ expected: OptionError, line: UInt = #line) {
        XCTAssertThrowsError(try model.validate(deviceSize: deviceSize), line: line) { error in
            XCTAssertEqual(error as? OptionError, expected, line: line)
        }
    }

    func testValuesAreReadOneWay() throws {
        XCTAssertEqual(try CapacityModel.capacity(parsing: "1.5G"), 3 << 29)
        XCTAssertThrowsError(try CapacityModel.capacity(parsing: "0")) { XCTAssertEqual($0 as? ValueError, .zero) }
        XCTAssertThrowsError(try CapacityModel.capacity(parsing: "12X")) { XCTAssertEqual($0 as? ValueError, .notASize) }
        XCTAssertEqual(try CapacityModel.external(parsing: "0"), 0)
        XCTAssertThrowsError(try CapacityModel.external(parsing: "-1M")) { XCTAssertEqual($0 as? ValueError, .negative) }
    }

    func testExternalMustBeBelowTheDevicesSize() {
        assertRefused(CapacityModel(capacity: 100 * mib, external: 150 * mib),
                      .externalNotBelowCapacity(external: "150 MiB", capacity: "100 MiB"))
        assertRefused(CapacityModel(capacity: 100 * mib, external: 100 * mib),
                      .externalNotBelowCapacity(external: "100 MiB", capacity: "100 MiB"))
        XCTAssertNoThrow(try CapacityModel(capacity: 100 * mib, external: 99 * mib).validate(deviceSize: nil))
        // A real device: its own size, once known.
        assertRefused(CapacityModel(external: 2 << 40), deviceSize: 1 << 40, .externalNotBelowCapacity(external: "2 TiB", capacity: "1 TiB"))
        XCTAssertNoThrow(try CapacityModel(external: 2 << 40).validate(deviceSize: nil), "not known yet: not checked")
        XCTAssertNoThrow(try CapacityModel(capacity: 4 << 40, external: 2 << 40).validate(deviceSize: 1 << 40), "a simulated device is its capacity")
    }

    func testMarksAreComparedAtTheDevicesSize() {
        let marks = CapacityModel(capacity: 200 * mib, low: .percent(10), high: .bytes(30 * mib))
        XCTAssertNoThrow(try marks.validate(deviceSize: nil))
        var grown = marks
        grown.capacity = 2 << 30
        assertRefused(grown, .lowAboveHigh(low: "10%", high: "30 MiB"))
        assertRefused(CapacityModel(low: .percent(10), high: .bytes(30 * mib)), deviceSize: 2 << 30, .lowAboveHigh(low: "10%", high: "30 MiB"))
        XCTAssertNoThrow(try CapacityModel(low: .percent(10), high: .bytes(30 * mib)).validate(deviceSize: nil))
    }

    /// External is checked first, as the mount options always did.
    func testPrecedence() {
        assertRefused(CapacityModel(capacity: 10 * mib, external: 20 * mib, low: .bytes(5 * mib), high: .bytes(mib)),
                      .externalNotBelowCapacity(external: "20 MiB", capacity: "10 MiB"))
    }
}
