import Foundation
import PurgeTesting
import Testing

/// SimulatedDevice with Swift Testing: a write that does not fit is
/// answered ENOSPC, and the mount counts it.
@Suite(.serialized) struct SimulatedDeviceSwiftTests {
    @Test func aWriteThatDoesNotFitFailsAndIsCounted() throws {
        let scratch = try ScratchContainer()
        defer { scratch.remove() }
        let device = try SimulatedDevice(container: scratch.container, capacity: .mebibytes(16), options: ["low=0", "high=0"],
                                         binary: try builtBinary())
        defer { try? device.unmount() }
        try device.squeeze(available: .mebibytes(1))
        let path = device.path("Documents/big.bin")
        #expect(throws: (any Error).self) { try Data(count: 2 << 20).write(to: URL(fileURLWithPath: path)) }
        #expect(try device.space().noSpaceReplies >= 1)
        #expect(try device.purged().isEmpty, "nothing purgeable to make room with")
        try device.unmount()
        #expect(!isMounted(device.mountPoint.path))
    }
}
