import Foundation
import PurgeTesting
import XCTest

/// SimulatedDevice with XCTest, against the real binary: each figure it
/// returns is checked against what the files really are.
final class SimulatedDeviceTests: XCTestCase {
    private var scratch: ScratchContainer!

    override func setUpWithError() throws {
        scratch = try ScratchContainer()
    }

    override func tearDown() {
        XCTAssertFalse(isMounted(scratch.base.path), "nothing left mounted")
        scratch.remove()
    }

    func testSqueezePurgesTheCachesAndTheEventsSayWhy() throws {
        let caches = scratch.container.path + "/Library/Caches"
        for index in 0..<4 { try writeFile(caches + "/\(index).bin", bytes: 1 << 20, age: TimeInterval(1000 * (4 - index))) }
        try writeFile(scratch.container.path + "/Documents/keep.db", bytes: 1 << 20)
        let device = try SimulatedDevice(container: scratch.container, capacity: .mebibytes(64), options: ["low=8M", "high=10M"],
                                         binary: try builtBinary())
        defer { try? device.unmount() }
        XCTAssertEqual(device.mountPoint.path, try XCTUnwrap(realpath(scratch.container.path, nil).map { String(cString: $0) }))
        XCTAssertTrue(isMounted(device.mountPoint.path))

        let before = try device.usage(of: "Library/Caches")
        XCTAssertEqual(before.files, 4)
        XCTAssertEqual(before.size, .mebibytes(4))
        XCTAssertEqual(before.purgeable, .mebibytes(4))
        XCTAssertEqual(try device.usage(of: "Documents/keep.db").purgeable, 0)

        // 7 MiB available: below the low mark; the monitor purges up to 10 MiB, the three oldest files.
        try device.squeeze(available: .mebibytes(7))
        try device.waitForMonitor()
        let events = try device.purged(in: "Library/Caches")
        XCTAssertEqual(events.map(\.path), ["Library/Caches/0.bin", "Library/Caches/1.bin", "Library/Caches/2.bin"])
        XCTAssertEqual(events.map(\.reason), [.monitor, .monitor, .monitor])
        XCTAssertEqual(events.map(\.bytes), [.mebibytes(1), .mebibytes(1), .mebibytes(1)])
        XCTAssertEqual(try device.purged(in: "Documents"), [])
        XCTAssertFalse(FileManager.default.fileExists(atPath: caches + "/0.bin"))
        XCTAssertTrue(FileManager.default.fileExists(atPath: caches + "/3.bin"))
        let space = try device.space()
        XCTAssertEqual(space.available, .mebibytes(10))
        XCTAssertEqual(space.peakUsed, .mebibytes(5))
        XCTAssertEqual(try device.usage(of: "Library/Caches").files, 1)

        try device.unmount()
        XCTAssertFalse(isMounted(device.mountPoint.path))
        try device.unmount()  // again: nothing to do
    }

    func testManualPurgePinAndCapacity() throws {
        let caches = scratch.container.path + "/Library/Caches"
        try writeFile(caches + "/old.bin", bytes: 1 << 20, age: 5000)
        try writeFile(caches + "/pinned.bin", bytes: 1 << 20, age: 9000)
        let device = try SimulatedDevice(container: scratch.container, capacity: .mebibytes(32), binary: try builtBinary())
        defer { try? device.unmount() }
        try device.pin("Library/Caches/pinned.bin")
        try device.purge(.kibibytes(4))
        XCTAssertEqual(try device.purged().map(\.path), ["Library/Caches/old.bin"], "the pinned file, though older, stays")
        XCTAssertEqual(try device.purged().first?.reason, .manual)
        try device.purgeAll()
        XCTAssertTrue(FileManager.default.fileExists(atPath: caches + "/pinned.bin"))
        try device.unpin("Library/Caches/pinned.bin")
        try device.purgeAll()
        XCTAssertFalse(FileManager.default.fileExists(atPath: caches + "/pinned.bin"))

        try device.setCapacity(.mebibytes(48))
        try device.setExternal(.mebibytes(8))
        let space = try device.space()
        XCTAssertEqual(space.capacity, .mebibytes(48))
        XCTAssertEqual(space.external, .mebibytes(8))
        XCTAssertEqual(space.available, .mebibytes(40))
    }

    func testABadOptionIsPurgefsOwnLine() throws {
        XCTAssertThrowsError(try SimulatedDevice(container: scratch.container, capacity: .mebibytes(8), options: ["bogus=1"],
                                                 binary: try builtBinary())) { error in
            XCTAssertEqual("\(error)", "purgefs mount \(self.scratch.container.path) -o capacity=8388608,bogus=1: purgefs: unknown mount option 'bogus'")
        }
    }
}
