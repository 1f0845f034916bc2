import PurgeCore
import XCTest

final class RecencyJournalTests: XCTestCase {
    private let a = EntryID(device: 1, inode: 10)
    private let b = EntryID(device: 1, inode: 11)

    func testChangesAreTakenOnceAndOnlyWhatChanged() throws {
        var ledger = Ledger()
        let root = EntryID(device: 1, inode: 2)
        try ledger.addDirectory(root, parent: nil)
        try ledger.addFile(a, parent: root, size: 1, allocated: 4096, lastUsed: 5)  // found by the walk
        try ledger.addFile(b, parent: root, size: 1, allocated: 4096)  // made through the mount
        XCTAssertEqual(ledger.takeRecencyChanges().records.map(\.id), [b])
        XCTAssertTrue(ledger.takeRecencyChanges().records.isEmpty)
        try ledger.markUsed(a)
        try ledger.markUsed(a)
        let changes = ledger.takeRecencyChanges()
        XCTAssertEqual(changes.records.map(\.id), [a], "one record per file, however often used")
        XCTAssertEqual(changes.records.first?.lastUsed, try ledger.file(a).lastUsed)
        XCTAssertEqual(changes.clock, ledger.clock.last)
    }

    func testJournalKeepsWholeBlocksAndDropsATornTail() {
        let first = RecencySnapshot(clock: 7, records: [.init(id: a, lastUsed: 3)])
        let second = RecencySnapshot(clock: 9, records: [.init(id: a, lastUsed: 8), .init(id: b, lastUsed: 9)])
        var bytes = first.encoded() + second.encoded()
        XCTAssertEqual(RecencySnapshot.decodingJournal(bytes), [first, second])
        bytes += Array(second.encoded().prefix(40))  // a write cut short
        XCTAssertEqual(RecencySnapshot.decodingJournal(bytes), [first, second])
        XCTAssertTrue(RecencySnapshot.decodingJournal(Array(bytes.prefix(30))).isEmpty)
    }

    func testLaterStampsWin() {
        let base = RecencySnapshot(clock: 5, records: [.init(id: a, lastUsed: 1), .init(id: b, lastUsed: 2)])
        let later = RecencySnapshot(clock: 9, records: [.init(id: a, lastUsed: 9)])
        let merged = base.merging(later)
        XCTAssertEqual(merged.clock, 9)
        XCTAssertEqual(Dictionary(uniqueKeysWithValues: merged.records.map { ($0.id, $0.lastUsed) }), [a: 9, b: 2])
    }
}
