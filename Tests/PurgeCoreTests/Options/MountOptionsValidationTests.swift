import XCTest
import PurgeCore

final class MountOptionsValidationTests: XCTestCase {
    private func assertRefused(_ list: [String], _ expected: OptionError, line: UInt = #line) {
        XCTAssertThrowsError(try MountOptions.parse(list), line: line) { error in
            XCTAssertEqual(error as? OptionError, expected, "for \(list)", line: line)
        }
    }

    func testLowAboveHighWhenComparable() {
        assertRefused(["low=30%"], .lowAboveHigh(low: "30%", high: "20%"))
        assertRefused(["low=2G,high=1G"], .lowAboveHigh(low: "2 GiB", high: "1 GiB"))
        assertRefused(["capacity=10G,low=3G"], .lowAboveHigh(low: "3 GiB", high: "20%"))
        assertRefused(["capacity=10G,low=5%,high=100M"], .lowAboveHigh(low: "5%", high: "100 MiB"))
    }

    func testLowEqualToHighIsAllowed() throws {
        XCTAssertNoThrow(try MountOptions.parse(["low=15%,high=15%"]))
        XCTAssertNoThrow(try MountOptions.parse(["low=1G,high=1G"]))
    }

    func testMixedThresholdsWithoutCapacityWaitForTheRealDevice() throws {
        let options = try MountOptions.parse(["low=100G"])
        XCTAssertNil(options.lowExceedsHigh())
    }

    func testExternalMustLeaveRoom() {
        assertRefused(["capacity=1G,external=1G"], .externalNotBelowCapacity(external: "1 GiB", capacity: "1 GiB"))
        assertRefused(["external=2G,capacity=1G"], .externalNotBelowCapacity(external: "2 GiB", capacity: "1 GiB"))
        XCTAssertNoThrow(try MountOptions.parse(["capacity=1G,external=1023M"]))
        XCTAssertNoThrow(try MountOptions.parse(["external=1T"])) // real device: nothing to compare with
    }

    func testZonesMustNotOverlap() {
        assertRefused(["purgeable=Documents"], .zonesOverlap(purgeable: "Documents", ubiquitous: "Documents"))
        assertRefused(["purgeable=Documents/cache"], .zonesOverlap(purgeable: "Documents/cache", ubiquitous: "Documents"))
        assertRefused(["ubiquitous=tmp/sync"], .zonesOverlap(purgeable: "tmp", ubiquitous: "tmp/sync"))
        XCTAssertNoThrow(try MountOptions.parse(["purgeable=Documents,ubiquitous=iCloud"]))
    }

    func testZonesMustNotCoverTheDefaultStateDirectory() {
        assertRefused(["purgeable=.purgefs"], .coversStateDirectory(option: "purgeable", path: ".purgefs"))
        assertRefused(["ubiquitous=.purgefs/x"], .coversStateDirectory(option: "ubiquitous", path: ".purgefs/x"))
        XCTAssertNoThrow(try MountOptions.parse(["purgeable=.purgefs,state=/var/lib/app"]))
    }

    func testAllowOtherAndAllowRootContradict() {
        assertRefused(["allow_other,allow_root"], .conflictingOptions("allow_other", "allow_root"))
    }

    func testContainerChecks() throws {
        let inZone = try MountOptions.parse(["state=/srv/app/tmp/state"])
        XCTAssertThrowsError(try inZone.validate(containerPath: "/srv/app")) { error in
            XCTAssertEqual(error as? OptionError, .coversStateDirectory(option: "purgeable", path: "tmp"))
        }
        XCTAssertNoThrow(try inZone.validate(containerPath: "/srv/other"))

        let isContainer = try MountOptions.parse(["state=/srv/app/"])
        XCTAssertThrowsError(try isContainer.validate(containerPath: "/srv/app")) { error in
            XCTAssertEqual(error as? OptionError, .stateDirectoryIsContainer("/srv/app"))
        }

        let cloudInside = try MountOptions.parse(["cloud=/srv/app/../app/remote"])
        XCTAssertThrowsError(try cloudInside.validate(containerPath: "/srv/app")) { error in
            XCTAssertEqual(error as? OptionError, .cloudOverlapsContainer("/srv/app/remote", container: "/srv/app"))
        }
        XCTAssertNoThrow(try MountOptions.parse(["cloud=/srv/remote,state=/srv/app/Library/state"]).validate(containerPath: "/srv/app"))
    }

    /// A store that is the container, or holds it (any ancestor, `/`
    /// included), or is, holds or lies in the state directory: refused.
    func testTheCloudStoreAndTheContainerOrStateDirectoryDoNotOverlap() throws {
        for store in ["/", "/srv", "/srv/app", "/srv/app/.purgefs", "/srv/app/Documents/remote"] {
            let options = try MountOptions.parse(["cloud=" + store])
            XCTAssertThrowsError(try options.validate(containerPath: "/srv/app"), store) { error in
                XCTAssertEqual(error as? OptionError, .cloudOverlapsContainer(store, container: "/srv/app"), store)
            }
        }
        for store in ["/var/lib/state", "/var/lib/state/remote", "/var/lib", "/var"] {
            let options = try MountOptions.parse(["cloud=" + store, "state=/var/lib/state"])
            XCTAssertThrowsError(try options.validate(containerPath: "/srv/app"), store) { error in
                XCTAssertEqual(error as? OptionError, .cloudOverlapsStateDirectory(store, state: "/var/lib/state"), store)
            }
        }
        XCTAssertNoThrow(try MountOptions.parse(["cloud=/srv/application"]).validate(containerPath: "/srv/app"), "a sibling whose name starts alike")
        XCTAssertNoThrow(try MountOptions.parse(["cloud=/var/lib/remote,state=/var/lib/state"]).validate(containerPath: "/srv/app"))
    }

    func testStateDirectoryPath() throws {
        XCTAssertEqual(MountOptions().stateDirectoryPath(containerPath: "/srv/app"), "/srv/app/.purgefs")
        XCTAssertEqual(try MountOptions.parse(["state=/s"]).stateDirectoryPath(containerPath: "/srv/app"), "/s")
    }
}
