import Foundation
import Glibc
import PurgeSys
import XCTest

/// Every figure means one thing (issue 12, item 5): `purgefs space`,
/// `purgefs usage`, `df`, the root's attributes and the metrics give the
/// same container used, device used and available, each under its own name
/// (`space --json` said `used` 46 MB where `usage --json` and `df` said
/// 151 MB: one was the container's, the other the device's).
class FiguresTestCase: PurgefsCommandTestCase {
    struct Figures: Equatable, CustomStringConvertible {
        var capacity, external, containerUsed, deviceUsed, available: UInt64
        var description: String {
            "capacity \(capacity) external \(external) container_used \(containerUsed) device_used \(deviceUsed) available \(available)"
        }
    }

    func attributes() throws -> Figures {
        Figures(capacity: try attribute("capacity", of: mnt), external: try attribute("external", of: mnt),
                containerUsed: try attribute("container_used", of: mnt), deviceUsed: try attribute("device_used", of: mnt),
                available: try attribute("available", of: mnt))
    }

    func figures(_ json: [String: Any]) -> Figures? {
        func number(_ name: String) -> UInt64? { (json[name] as? NSNumber)?.uint64Value }
        guard let capacity = number("capacity"), let external = number("external"), let containerUsed = number("container_used"),
              let deviceUsed = number("device_used"), let available = number("available") else { return nil }
        return Figures(capacity: capacity, external: external, containerUsed: containerUsed, deviceUsed: deviceUsed, available: available)
    }

    /// space, usage, df, the attributes and the metrics agree (df to the block).
    func assertEveryDoorAgrees(_ label: String, file: StaticString = #filePath, line: UInt = #line) throws -> Figures {
        let shown = try attributes()
        let space = try object(try succeed("space", mnt, "--json", file: file, line: line), file: file, line: line)
        XCTAssertEqual(figures(space), shown, "\(label): space --json vs the attributes: \(space)", file: file, line: line)
        XCTAssertNil(space["used"], "\(label): space --json has no figure called just used", file: file, line: line)
        let usage = try object(try succeed("usage", mnt, "--json", file: file, line: line), file: file, line: line)
        let device = try XCTUnwrap(usage["device"] as? [String: Any], file: file, line: line)
        XCTAssertEqual(figures(device), shown, "\(label): usage --json vs the attributes: \(device)", file: file, line: line)
        XCTAssertNil(device["used"], "\(label): usage --json has no figure called just used", file: file, line: line)

        let df = try Subprocess.run(["df", "-B1", "--output=size,used,avail", mnt], timeout: 20)
        let numbers = df.stdout.split(separator: "\n").last?.split(separator: " ").compactMap { UInt64($0) } ?? []
        XCTAssertEqual(numbers.count, 3, "\(label): \(df)", file: file, line: line)
        if numbers.count == 3 {
            var status = statvfs()
            XCTAssertEqual(statvfs(mnt, &status), 0, file: file, line: line)
            let unit = UInt64(status.f_frsize)
            XCTAssertTrue(shown.capacity - numbers[0] < unit, "\(label): df size \(numbers[0]) vs capacity; \(shown)", file: file, line: line)
            XCTAssertTrue(numbers[1] >= shown.deviceUsed && numbers[1] - shown.deviceUsed < unit,
                          "\(label): df used \(numbers[1]) vs device_used (rounded up to a \(unit)-byte block); \(shown)", file: file, line: line)
            XCTAssertTrue(numbers[2] <= shown.available && shown.available - numbers[2] < unit,
                          "\(label): df avail \(numbers[2]) vs available (rounded down); \(shown)", file: file, line: line)
        }

        let prometheus = try succeed("metrics", mnt, "--prometheus", file: file, line: line)
        let (samples, problems) = PrometheusGrammar.parse(prometheus)
        XCTAssertEqual(problems, [], file: file, line: line)
        func metric(_ name: String) -> UInt64? { samples.first { $0.name == name }.map { UInt64($0.value) } }
        XCTAssertEqual(metric("purgefs_capacity_bytes"), shown.capacity, "\(label): metrics capacity", file: file, line: line)
        XCTAssertEqual(metric("purgefs_available_bytes"), shown.available, "\(label): metrics available", file: file, line: line)
        XCTAssertEqual(metric("purgefs_total_file_size_bytes"), try attribute("allocated", of: mnt),
                       "\(label): metrics total file size is the root's allocated", file: file, line: line)
        return shown
    }
}

final class SimulatedDeviceFiguresTests: FiguresTestCase {
    override var mountOptions: [String] { ["capacity=200M", "external=105M"] }

    func testContainerUsedAndDeviceUsedEverywhere() throws {
        XCTAssertEqual(writeBytes(mnt + "/Documents/big", tiled(10 * MiB, seed: 1)), 0)
        XCTAssertTrue(eventually { (try? self.attribute("purgeable", of: self.mnt)) == (try? self.attribute("allocated", of: self.mnt + "/caches"))
            .map { $0 + ((try? self.attribute("allocated", of: self.mnt + "/Library/Caches")) ?? 0) + ((try? self.attribute("allocated", of: self.mnt + "/tmp")) ?? 0) } })
        var shown = try assertEveryDoorAgrees("with documents and caches")
        let walk = BackingWalk(fixture.container).totals(of: "", zones: AccountingTests.zones)
        XCTAssertEqual(shown.containerUsed, walk.allocated, "container_used is the container's bytes on disk: \(shown)")
        XCTAssertEqual(shown.deviceUsed, shown.external + shown.containerUsed, "device_used = external + container_used: \(shown)")
        XCTAssertEqual(shown.capacity, shown.deviceUsed + shown.available, "on a simulated device, capacity = device_used + available: \(shown)")

        // A file deleted while open still takes room: in container_used, not in any directory's allocated.
        let fd = open(mnt + "/Documents/scratch", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        let data = tiled(MiB, seed: 2)
        XCTAssertEqual(data.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }, MiB)
        XCTAssertEqual(unlink(mnt + "/Documents/scratch"), 0)
        shown = try assertEveryDoorAgrees("with a file deleted while open")
        XCTAssertEqual(shown.containerUsed, try attribute("allocated", of: mnt) + UInt64(MiB), "container_used counts the open, deleted file: \(shown)")
        XCTAssertEqual(shown.deviceUsed, shown.external + shown.containerUsed, "\(shown)")
    }
}

final class RealDeviceFiguresTests: FiguresTestCase {
    override var mountOptions: [String] { [] }

    /// On the real device (the backing filesystem, shared with the rest of
    /// the machine) the figures move while the test reads them; each door
    /// reads its own moment, so they are compared where they cannot move:
    /// within one read, and container_used against the container itself.
    func testContainerUsedIsTheContainersOwnOnTheRealDevice() throws {
        let shown = try attributes()
        XCTAssertEqual(shown.containerUsed, try attribute("allocated", of: mnt), "container_used is the container's, not the backing filesystem's: \(shown)")
        XCTAssertLessThan(shown.containerUsed, 1 << 20, "the small test container: \(shown)")
        XCTAssertGreaterThan(shown.deviceUsed, shown.containerUsed, "device_used counts the backing filesystem's other files: \(shown)")
        let space = try XCTUnwrap(figures(try object(try succeed("space", mnt, "--json"))))
        XCTAssertEqual(space.containerUsed, shown.containerUsed, "space --json container_used")
        XCTAssertEqual(space.capacity, shown.capacity)
        var status = statvfs()
        XCTAssertEqual(statvfs(mnt, &status), 0)
        let unit = UInt64(status.f_frsize)
        let dfUsed = (UInt64(status.f_blocks) - UInt64(status.f_bfree)) * unit
        let slack: UInt64 = 256 << 20  // what the rest of the machine may write between two reads
        XCTAssertLessThan(max(dfUsed, shown.deviceUsed) - min(dfUsed, shown.deviceUsed), slack, "df Used ≈ device_used: \(dfUsed) vs \(shown)")
    }
}
