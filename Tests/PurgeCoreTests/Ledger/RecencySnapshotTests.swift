@testable import PurgeCore
import XCTest

final class RecencySnapshotTests: XCTestCase {
    func testEncodingRoundTripsAndRefusesDamage() throws {
        let snapshot = RecencySnapshot(clock: 99, records: [
            .init(id: EntryID(device: 1, inode: 2), lastUsed: 3),
            .init(id: EntryID(device: .max, inode: 0), lastUsed: .max),
        ])
        let bytes = snapshot.encoded()
        XCTAssertEqual(bytes.count, 24 + 2 * 24)
        XCTAssertEqual(try RecencySnapshot(decoding: bytes), snapshot)
        XCTAssertThrowsError(try RecencySnapshot(decoding: Array(bytes.dropLast())))
        XCTAssertThrowsError(try RecencySnapshot(decoding: bytes + [0]))
        XCTAssertThrowsError(try RecencySnapshot(decoding: [0] + bytes.dropFirst()))
        XCTAssertThrowsError(try RecencySnapshot(decoding: []))
    }

    func testRestoringRecreatesThePurgeOrderAndKeepsStampsMonotone() throws {
        var first = try Container.make()
        for n: UInt64 in 10..<20 { try first.addFile(entry(n), parent: Container.tmp, size: 1, allocated: 100) }
        let group = entry(30)
        try first.addDirectory(group, parent: Container.caches)
        try first.setGroup(group, true)
        try first.addFile(entry(31), parent: group, size: 1, allocated: 100)
        try first.addFile(entry(32), parent: group, size: 1, allocated: 100)
        // Use them in a scrambled order.
        for n: UInt64 in [15, 12, 19, 31, 10, 18, 11, 13, 14, 16, 32, 17] { try first.markUsed(entry(n)) }
        let expected = PurgePlanner.plan(.all, in: first).victims.map(\.file)
        let bytes = first.recencySnapshot().encoded()

        // A remount: the same files found by a walk, in another order, with no recency.
        var second = Ledger()
        try second.addDirectory(Container.root, parent: nil)
        try second.addDirectory(Container.library, parent: Container.root)
        try second.addDirectory(Container.caches, parent: Container.library)
        try second.addDirectory(Container.documents, parent: Container.root)
        try second.addDirectory(Container.tmp, parent: Container.root)
        try second.addDirectory(group, parent: Container.caches)
        for n: UInt64 in (10..<20).reversed() { try second.addFile(entry(n), parent: Container.tmp, size: 1, allocated: 100, lastUsed: 0) }
        try second.addFile(entry(32), parent: group, size: 1, allocated: 100, lastUsed: 0)
        try second.addFile(entry(31), parent: group, size: 1, allocated: 100, lastUsed: 0)
        try second.setZone(Container.caches, true)
        try second.setZone(Container.tmp, true)
        try second.setGroup(group, true)
        second.restoreRecency(try RecencySnapshot(decoding: bytes))
        assertConsistent(second)
        XCTAssertEqual(PurgePlanner.plan(.all, in: second).victims.map(\.file), expected)
        XCTAssertGreaterThan(try second.markUsed(entry(10)), first.clock.last)
        XCTAssertEqual(try second.file(entry(17)).lastUsed, try first.file(entry(17)).lastUsed)
        XCTAssertEqual(try second.directory(group).lastUsed, try first.directory(group).lastUsed)
    }

    /// A file the walk finds newer than its record (written while unmounted,
    /// or a new file with a deleted one's inode number) keeps the walk's stamp.
    func testARestoredStampNeverAgesAFileBelowWhatTheWalkFound() throws {
        var first = Ledger()
        try first.addDirectory(Container.root, parent: nil)
        try first.addDirectory(Container.tmp, parent: Container.root)
        try first.addFile(entry(40), parent: Container.tmp, size: 1, allocated: 100)
        try first.addFile(entry(41), parent: Container.tmp, size: 1, allocated: 100)
        try first.markUsed(entry(40))
        try first.markUsed(entry(41))
        let snapshot = try RecencySnapshot(decoding: first.recencySnapshot().encoded())

        var second = Ledger()
        try second.addDirectory(Container.root, parent: nil)
        try second.addDirectory(Container.tmp, parent: Container.root)
        try second.setZone(Container.tmp, true)
        let later = first.clock.last + 1_000
        try second.addFile(entry(40), parent: Container.tmp, size: 1, allocated: 100, lastUsed: later)
        try second.addFile(entry(41), parent: Container.tmp, size: 1, allocated: 100, lastUsed: 0)
        XCTAssertEqual(second.restoreRecency(snapshot), 2)
        XCTAssertEqual(try second.file(entry(40)).lastUsed, later, "the walk's newer stamp stays")
        XCTAssertEqual(try second.file(entry(41)).lastUsed, try first.file(entry(41)).lastUsed, "an older one is restored")
        XCTAssertEqual(PurgePlanner.plan(.all, in: second).victims.map(\.file), [entry(41), entry(40)])
        assertConsistent(second)
    }
}
