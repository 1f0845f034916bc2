import PurgeSys
import XCTest

final class ProcessMemoryTests: XCTestCase {
    /// glibc raises its mmap threshold to the size of each mapped block
    /// freed, so after one freed 4 MiB block a 1 MiB one would be carved out
    /// of an arena (and its pages kept there once freed). Bound, the
    /// threshold stays put and the 1 MiB block is mapped on its own.
    func testABoundHeapStillMapsLargeBlocksAfterALargerOneWasFreed() {
        XCTAssertTrue(ProcessMemory.bound(arenas: 2, mappedFrom: 256 << 10))
        let large = UnsafeMutableRawPointer.allocate(byteCount: 4 << 20, alignment: 16)
        large.initializeMemory(as: UInt8.self, repeating: 1, count: 4 << 20)
        large.deallocate()
        let before = ProcessMemory.figures
        let block = UnsafeMutableRawPointer.allocate(byteCount: 1 << 20, alignment: 16)
        block.initializeMemory(as: UInt8.self, repeating: 2, count: 1 << 20)
        let during = ProcessMemory.figures
        block.deallocate()
        XCTAssertGreaterThan(during.mappedBlocks, before.mappedBlocks, "the 1 MiB block came from an arena")
        XCTAssertGreaterThanOrEqual(during.mappedBytes, before.mappedBytes + (1 << 20))
    }

    func testTheFiguresCountWhatIsAllocated() {
        let before = ProcessMemory.figures
        let block = UnsafeMutableRawPointer.allocate(byteCount: 64 << 10, alignment: 16)
        block.initializeMemory(as: UInt8.self, repeating: 3, count: 64 << 10)
        let during = ProcessMemory.figures
        block.deallocate()
        XCTAssertGreaterThan(during.allocatedBytes + during.mappedBytes, before.allocatedBytes + before.mappedBytes)
        XCTAssertGreaterThan(during.arenaBytes, 0)
    }
}
