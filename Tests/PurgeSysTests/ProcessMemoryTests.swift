import PurgeSys
import XCTest

final class ProcessMemoryTests: XCTestCase {
    /// glibc raises its mmap threshold to the size of each mapped block
    /// freed, so after one freed 24 MiB block a 16 MiB one would be carved
    /// out of an arena (and its pages kept there once freed). Bound, the
    /// threshold stays put and the 16 MiB block is mapped on its own. The
    /// sizes are large so that no free chunk the earlier tests left in an
    /// arena can serve the block (a chunk that fits is used before any
    /// threshold is asked), and below glibc's own ceiling of 32 MiB.
    func testABoundHeapStillMapsLargeBlocksAfterALargerOneWasFreed() {
        XCTAssertTrue(ProcessMemory.bound(arenas: 2, mappedFrom: 256 << 10))
        let large = UnsafeMutableRawPointer.allocate(byteCount: 24 << 20, alignment: 16)
        large.initializeMemory(as: UInt8.self, repeating: 1, count: 24 << 20)
        large.deallocate()
        let before = ProcessMemory.figures
        let block = UnsafeMutableRawPointer.allocate(byteCount: 16 << 20, alignment: 16)
        block.initializeMemory(as: UInt8.self, repeating: 2, count: 16 << 20)
        let during = ProcessMemory.figures
        block.deallocate()
        XCTAssertGreaterThan(during.mappedBlocks, before.mappedBlocks, "the 16 MiB block came from an arena")
        XCTAssertGreaterThanOrEqual(during.mappedBytes, before.mappedBytes + (16 << 20))
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
