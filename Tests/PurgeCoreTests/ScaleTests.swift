@testable import PurgeCore
import XCTest

/// A million files: the shape of the memory and of the work per operation,
/// checked by structure (sizes, heap levels walked, items examined), never
/// by timing.
final class ScaleTests: XCTestCase {
    func testRecordsStaySmall() {
        XCTAssertLessThanOrEqual(MemoryLayout<FileRecord>.stride, 56)
        XCTAssertLessThanOrEqual(MemoryLayout<RecencyIndex.Entry>.stride, 16)
        XCTAssertEqual(MemoryLayout<NodeRef>.stride, 4)
        XCTAssertEqual(MemoryLayout<EntryID>.stride, 16)
    }

    func testAMillionFiles() throws {
        let count = 1_000_000, perDirectory = 1_000
        var ledger = Ledger()
        ledger.reserveCapacity(files: count, directories: count / perDirectory + 3)
        let root = EntryID(device: 1, inode: 1), caches = EntryID(device: 1, inode: 2)
        try ledger.addDirectory(root, parent: nil)
        try ledger.addDirectory(caches, parent: root)
        try ledger.setZone(caches, true)
        var inode: UInt64 = 10
        for _ in 0..<(count / perDirectory) {
            let directory = EntryID(device: 1, inode: inode)
            inode += 1
            try ledger.addDirectory(directory, parent: caches)
            for _ in 0..<perDirectory {
                try ledger.addFile(EntryID(device: 1, inode: inode), parent: directory, size: 1000, allocated: 4096)
                inode += 1
            }
        }
        XCTAssertEqual(ledger.rootTotals.files, UInt64(count))
        XCTAssertEqual(ledger.rootTotals.purgeable, UInt64(count) * 4096)
        XCTAssertEqual(ledger.purgeOrderCount, count)

        // About 100 bytes a file: the record, the heap entry and its position,
        // and the identity table's share (4-byte buckets, at most 3/4 full).
        let perFile = MemoryLayout<FileRecord>.stride
            + MemoryLayout<RecencyIndex.Entry>.stride + MemoryLayout<UInt32>.stride
        let table = Double(MemoryLayout<UInt32>.stride * ledger.identities.bucketCount) / Double(ledger.identities.count)
        XCTAssertLessThanOrEqual(table, 4 * 8 / 3 + 0.01, "the table is never less than 3/8 full after growing")
        XCTAssertLessThanOrEqual(Double(perFile) + table, 100, "bytes per file")
        print("ScaleTests: about \(perFile) + \(Int(table)) bytes per file")

        // The heap has ⌈log2(n + 1)⌉ = 20 levels: one use, one removal walk
        // at most that many, whatever n is.
        let depth = 64 - UInt64(count).leadingZeroBitCount  // 20
        let oldest = ledger.index.oldest!.item
        XCTAssertEqual(oldest, .file(0), "the first file added is the least recently used")
        try ledger.markUsed(ledger.files[0].id)
        XCTAssertLessThanOrEqual(ledger.index.lastSteps, depth)
        XCTAssertGreaterThan(ledger.index.lastSteps, 0)

        // Planning k victims examines k items, not n.
        let plan = PurgePlanner.plan(.bytes(100 * 4096), in: ledger)
        XCTAssertEqual(plan.victims.count, 100)
        XCTAssertEqual(plan.examinedItems, 100)
        XCTAssertEqual(plan.victims.first?.file, ledger.files[1].id)
        for victim in plan.victims {
            try ledger.purged(victim)
            XCTAssertLessThanOrEqual(ledger.index.lastSteps, depth)
        }
        XCTAssertEqual(ledger.purgeOrderCount, count - 100)
        XCTAssertEqual(ledger.rootTotals.files, UInt64(count - 100))
    }
}
