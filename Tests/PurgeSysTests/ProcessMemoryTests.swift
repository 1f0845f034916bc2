import Foundation
import PurgeSys
import XCTest

final class ProcessMemoryTests: XCTestCase {
    /// glibc raises its mmap threshold to the size of each mapped block
    /// freed, so after one freed 24 MiB block a 16 MiB one would be carved
    /// out of an arena (and its pages kept there once freed). Bound, the
    /// threshold stays put and the 16 MiB block is mapped on its own.
    ///
    /// It runs in a fresh process of this test binary: in the shared one,
    /// the tests before may have raised glibc's trim threshold (it follows
    /// the mmap threshold until the bound fixes it) and left a free top of
    /// heap large enough to serve the block, which is used before any
    /// threshold is asked.
    func testABoundHeapStillMapsLargeBlocksAfterALargerOneWasFreed() throws {
        guard ProcessInfo.processInfo.environment[Self.childMarker] != nil else {
            try runInAFreshProcess(#function)
            return
        }
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

    private static let childMarker = "PURGEFS_PROCESS_MEMORY_CHILD"

    /// Runs one test of this class alone in a new process of the test
    /// binary and fails with its output if it failed there.
    private func runInAFreshProcess(_ function: String) throws {
        let name = function.hasSuffix("()") ? String(function.dropLast(2)) : function
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/proc/self/exe")
        child.arguments = ["PurgeSysTests.ProcessMemoryTests/\(name)"]
        var environment = ProcessInfo.processInfo.environment
        environment[Self.childMarker] = "1"
        child.environment = environment
        let output = Pipe()
        child.standardOutput = output
        child.standardError = output
        try child.run()
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        child.waitUntilExit()
        let text = String(decoding: printed, as: UTF8.self)
        XCTAssertEqual(child.terminationStatus, 0, text)
        XCTAssertTrue(text.contains("Executed 1 test"), "the child ran no test:\n\(text)")
    }
}
