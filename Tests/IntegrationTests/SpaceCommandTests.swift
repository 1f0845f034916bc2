import Foundation
import Glibc
import PurgeSys
import XCTest

/// `purgefs space`: the device figures, and changing the simulated device.
final class SpaceCommandTests: PurgefsCommandTestCase {
    private func dfSize(_ path: String) throws -> UInt64 {
        var status = statvfs()
        XCTAssertEqual(statvfs(path, &status), 0)
        return UInt64(status.f_blocks) * UInt64(status.f_frsize)
    }

    func testShowsTheRootsFigures() throws {
        let json = try object(try succeed("space", mnt, "--json"))
        for (field, name) in [("capacity", "capacity"), ("external", "external"), ("container_used", "container_used"),
                              ("device_used", "device_used"), ("available", "available"),
                              ("available_important", "available_important"), ("available_opportunistic", "available_opportunistic"),
                              ("purgeable", "purgeable"), ("purged_bytes", "purged_bytes"), ("purged_files", "purged_files")] {
            XCTAssertEqual((json[field] as? NSNumber)?.uint64Value, try attribute(name, of: mnt), field)
        }
        XCTAssertEqual((json["capacity"] as? NSNumber)?.uint64Value, 64 << 20)
        let capacity = try attribute("capacity", of: mnt), external = try attribute("external", of: mnt)
        let available = try attribute("available", of: mnt)
        XCTAssertEqual((json["container_used"] as? NSNumber)?.uint64Value, capacity - external - available)
        XCTAssertEqual((json["device_used"] as? NSNumber)?.uint64Value, capacity - available)

        let text = try succeed("space", mnt)
        for label in ["capacity", "external", "used by the container", "used on the device", "available for important usage", "available for opportunistic usage",
                      "purgeable", "purged", "64 MiB"] {
            XCTAssertTrue(text.contains(label), "\(label) in\n\(text)")
        }
    }

    func testCapacityAndExternalChangeDf() throws {
        XCTAssertEqual(try dfSize(mnt), 64 << 20)
        let text = try succeed("space", mnt, "--capacity", "128M", "--external=16M")
        XCTAssertTrue(text.hasPrefix("Set capacity 128 MiB and external 16 MiB."), text)
        XCTAssertEqual(try dfSize(mnt), 128 << 20)
        XCTAssertEqual(try attribute("capacity", of: mnt), 128 << 20)
        XCTAssertEqual(try attribute("external", of: mnt), 16 << 20)
        let df = try Subprocess.run(["df", "-B1", "--output=size", mnt], timeout: 20)
        XCTAssertTrue(df.stdout.contains(String(128 << 20)), "\(df)")
        let json = try object(try succeed("space", mnt, "--external", "0", "--json"))
        XCTAssertEqual((json["external"] as? NSNumber)?.uint64Value, 0)
        XCTAssertEqual((json["capacity"] as? NSNumber)?.uint64Value, 128 << 20)
    }

    /// Squeezing the device below the low mark: the monitor purges within a second or so.
    func testSqueezingTheDeviceMakesTheMonitorPurge() throws {
        XCTAssertEqual(try attribute("purged_files", of: mnt), 0)
        let used = try attribute("allocated", of: mnt)
        // Leave less than the low mark (10% of the capacity) available.
        try succeed("space", mnt, "--capacity", String(used + 2048))
        let deadline = Date().addingTimeInterval(10)
        while try attribute("purged_files", of: mnt) == 0 && Date() < deadline { usleep(20_000) }
        XCTAssertGreaterThan(try attribute("purged_files", of: mnt), 0, "the monitor did not purge after purgefs space squeezed the device")
        XCTAssertTrue(exists(mnt + "/Documents/report.txt"))
    }

    func testBadValues() throws {
        try assertRejected(["space", mnt, "--capacity", "0"], status: 64, mentioning: ["must be more than 0"])
        try assertRejected(["space", mnt, "--external", "-1M"], status: 64, mentioning: ["must not be negative"])
        try assertRejected(["space", mnt + "/Documents"], status: 1, mentioning: ["give the mount point"])
        XCTAssertEqual(try attribute("capacity", of: mnt), 64 << 20, "nothing changed")
    }
}
