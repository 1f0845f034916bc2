import PurgeCore
import XCTest

final class CapacityModelTests: XCTestCase {
    let gib: UInt64 = 1 << 30

    func testSimulatedDevice() {
        let model = CapacityModel(capacity: 10 * gib, external: 3 * gib, low: .percent(10), high: .percent(20))
        let status = model.status(usage: 2 * gib, purgeable: gib)
        XCTAssertEqual(status.capacity, 10 * gib)
        XCTAssertEqual(status.available, 5 * gib)
        XCTAssertEqual(status.availableImportant, 6 * gib)
        XCTAssertEqual(status.availableOpportunistic, 5 * gib - gib)
        XCTAssertEqual(status.lowMark, gib)
        XCTAssertEqual(status.highMark, 2 * gib)
        XCTAssertFalse(status.isBelowLow)
        XCTAssertEqual(status.monitorTarget, 0)
    }

    func testAvailableNeverGoesBelowZero() {
        let model = CapacityModel(capacity: gib, external: 2 * gib)
        let status = model.status(usage: gib, purgeable: 100)
        XCTAssertEqual(status.available, 0)
        XCTAssertEqual(status.availableOpportunistic, 0)
        XCTAssertEqual(status.availableImportant, 100)
    }

    func testRealDeviceUsesTheBackingSnapshot() {
        let model = CapacityModel(external: gib, low: .bytes(100), high: .bytes(200))
        XCTAssertFalse(model.isSimulated)
        let status = model.status(usage: 12345, purgeable: 0, backing: BackingSpace(size: 50 * gib, available: 4 * gib))
        XCTAssertEqual(status.capacity, 50 * gib)
        XCTAssertEqual(status.available, 3 * gib, "external squeezes a real device too")
        XCTAssertEqual(status.lowMark, 100)
    }

    func testFromMountOptions() {
        var options = MountOptions()
        options.capacity = 1000
        options.external = 10
        options.low = .bytes(5)
        XCTAssertEqual(CapacityModel(options: options), CapacityModel(capacity: 1000, external: 10, low: .bytes(5), high: .percent(20)))
    }

    func testBytesToFreeForAWrite() {
        let status = CapacityModel(capacity: 1000).status(usage: 900, purgeable: 300)
        XCTAssertEqual(status.available, 100)
        XCTAssertEqual(status.bytesToFree(for: 50), 0)
        XCTAssertEqual(status.bytesToFree(for: 100), 0)
        XCTAssertEqual(status.bytesToFree(for: 250), 150)
        XCTAssertTrue(status.canFit(400))
        XCTAssertFalse(status.canFit(401), "more than available + purgeable: ENOSPC without purging")
    }

    func testMonitorTargetReachesTheHighMark() {
        let model = CapacityModel(capacity: 1000, low: .bytes(100), high: .bytes(300))
        XCTAssertEqual(model.status(usage: 950, purgeable: 500).monitorTarget, 250)
        XCTAssertEqual(model.status(usage: 850, purgeable: 500).monitorTarget, 0, "between the marks: no new episode")
        let swapped = CapacityModel(capacity: 1000, low: .bytes(300), high: .bytes(100))
        XCTAssertEqual(swapped.status(usage: 800, purgeable: 500).monitorTarget, 100, "marks the wrong way round: up to low")
    }

    func testMonitorHysteresis() {
        let model = CapacityModel(capacity: 1000, low: .bytes(100), high: .bytes(300))
        var monitor = PurgeMonitor()
        XCTAssertEqual(monitor.target(for: model.status(usage: 850, purgeable: 500)), 0, "above low: idle")
        XCTAssertFalse(monitor.isPurging)
        XCTAssertEqual(monitor.target(for: model.status(usage: 950, purgeable: 500)), 250, "below low: start")
        XCTAssertTrue(monitor.isPurging)
        // A round freed only part of it: A is between the marks, keep going.
        XCTAssertEqual(monitor.target(for: model.status(usage: 850, purgeable: 400)), 150)
        XCTAssertEqual(monitor.target(for: model.status(usage: 700, purgeable: 250)), 0, "at high: stop")
        XCTAssertFalse(monitor.isPurging)
        XCTAssertEqual(monitor.target(for: model.status(usage: 850, purgeable: 250)), 0, "between the marks again: idle")
        _ = monitor.target(for: model.status(usage: 990, purgeable: 0))
        monitor.stop()
        XCTAssertEqual(monitor.target(for: model.status(usage: 850, purgeable: 0)), 0)
    }

    /// Each figure once (docs/DESIGN.md "The figures").
    func testContainerUsedDeviceUsedAndFree() {
        let simulated = CapacityModel(capacity: 200 * gib, external: 105 * gib).status(usage: 46 * gib, purgeable: 0)
        XCTAssertEqual(simulated.containerUsed, 46 * gib)
        XCTAssertEqual(simulated.free, simulated.available)
        XCTAssertEqual(simulated.deviceUsed, 151 * gib, "external included")
        XCTAssertEqual(simulated.deviceUsed + simulated.available, simulated.capacity)

        // A real device: free counts the blocks reserved for root, available does not.
        let real = CapacityModel(external: gib).status(usage: 12345, purgeable: 0,
                                                       backing: BackingSpace(size: 50 * gib, available: 4 * gib, free: 6 * gib))
        XCTAssertEqual(real.containerUsed, 12345, "the container's own, not the backing filesystem's")
        XCTAssertEqual(real.available, 3 * gib)
        XCTAssertEqual(real.free, 5 * gib)
        XCTAssertEqual(real.deviceUsed, 45 * gib)

        var reserved = simulated
        reserved.reserve(gib)
        XCTAssertEqual(reserved.available, simulated.available - gib)
        XCTAssertEqual(reserved.deviceUsed, simulated.deviceUsed + gib, "writes in flight are in use on the device")
    }

    // MARK: Figures at the edges: saturated, never a trap

    func testFiguresAtTheMaximumAndBeyond() {
        let edges: [UInt64] = [0, 1, 4095, 4096, ByteSize.maximum - 1, ByteSize.maximum, ByteSize.maximum + 1,
                               UInt64.max - 1, UInt64.max]
        for capacity in edges where capacity > 0 {
            for external in edges {
                for usage in [0, ByteSize.maximum, UInt64.max] {
                    var model = CapacityModel(capacity: capacity, external: external, low: .percent(100), high: .bytes(.max))
                    model.neighbours = usage
                    model.neighbourPurgeable = UInt64.max
                    var status = model.status(usage: usage, purgeable: UInt64.max)
                    XCTAssertLessThanOrEqual(status.available, capacity)
                    XCTAssertEqual(status.lowMark, capacity, "100% of the capacity is the capacity, even at 2^64 - 1")
                    XCTAssertEqual(status.availableImportant, .max)
                    XCTAssertEqual(status.deviceUsed, capacity - status.available)
                    XCTAssertTrue(status.canFit(.max))
                    _ = (status.availableOpportunistic, status.bytesToHigh, status.monitorTarget, status.bytesToFree(for: .max))
                    for unit in [0, 1, 512, 4096, UInt64.max] as [UInt64] {
                        let blocks = status.blockFigures(unit: unit)
                        XCTAssertLessThanOrEqual(blocks.available, blocks.free)
                        XCTAssertLessThanOrEqual(blocks.free, blocks.blocks)
                    }
                    status.reserve(.max)
                    XCTAssertEqual(status.available, 0)
                }
            }
        }
    }

    func testTheRecipeThatKilledDf() {
        // capacity 2^64 - 1, external 2^64 - 2: one byte free, device used 2^64 - 2, which rounded up to a block overflowed.
        let model = CapacityModel(capacity: .max, external: .max - 1)
        let status = model.status(usage: 0, purgeable: 0)
        XCTAssertEqual(status.available, 1)
        XCTAssertEqual(status.deviceUsed, .max - 1)
        let blocks = status.blockFigures(unit: 4096)
        XCTAssertEqual(blocks.blocks, UInt64.max / 4096)
        XCTAssertEqual(blocks.free, 0, "the one free byte is less than a block, and device used is rounded up")
        XCTAssertEqual(blocks.available, 0)
        // The same device at the largest size taken.
        let largest = CapacityModel(capacity: ByteSize.maximum, external: ByteSize.maximum - 1).status(usage: 0, purgeable: 0)
        XCTAssertEqual(largest.blockFigures(unit: 4096).blocks, ByteSize.maximum / 4096)
        XCTAssertEqual(largest.blockFigures(unit: 1).free, 1)
    }

    func testCapacityBelowExternalLeavesNothing() {
        let status = CapacityModel(capacity: 4096, external: 1 << 40).status(usage: 100, purgeable: 7)
        XCTAssertEqual(status.available, 0)
        XCTAssertEqual(status.deviceUsed, 4096)
        XCTAssertEqual(status.availableImportant, 7)
        XCTAssertEqual(status.blockFigures(unit: 4096).free, 0)
        XCTAssertThrowsError(try CapacityModel(capacity: 4096, external: 1 << 40).validate(deviceSize: nil))
    }

    func testARealDeviceWithHugeFigures() {
        let backing = BackingSpace(size: .max, available: .max, free: .max)
        let status = CapacityModel(external: ByteSize.maximum).status(usage: .max, purgeable: .max, backing: backing)
        XCTAssertEqual(status.available, UInt64.max - ByteSize.maximum)
        XCTAssertEqual(status.availableImportant, .max)
        XCTAssertEqual(status.blockFigures(unit: 4096).available, (UInt64.max - ByteSize.maximum) / 4096)
    }

    func testPercentMarksOfAnyCapacity() {
        XCTAssertEqual(SpaceThreshold.percent(100).bytes(ofCapacity: .max), .max)
        XCTAssertEqual(SpaceThreshold.percent(50).bytes(ofCapacity: ByteSize.maximum), ByteSize.maximum / 2)
        XCTAssertEqual(SpaceThreshold.percent(.nan).bytes(ofCapacity: .max), 0)
        XCTAssertEqual(SpaceThreshold.percent(1e300).bytes(ofCapacity: 1000), 1000)
        XCTAssertEqual(SpaceThreshold.percent(-5).bytes(ofCapacity: 1000), 0)
    }
}
