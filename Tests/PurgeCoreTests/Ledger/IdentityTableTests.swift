@testable import PurgeCore
import TestSupport
import XCTest

/// The identity table against a dictionary, under random adds and removes
/// that reuse slots (as the ledger does), including colliding identities.
final class IdentityTableTests: XCTestCase {
    func testAgreesWithADictionaryUnderChurn() throws {
        var generator = SeededGenerator(seed: 0x1D_7AB1E)
        var ledger = Ledger()
        let root = EntryID(device: 9, inode: 1)
        try ledger.addDirectory(root, parent: nil)
        var model: Set<EntryID> = [root]
        var live: [EntryID] = []
        for step in 0..<20_000 {
            if live.isEmpty || Int.random(in: 0..<3, using: &generator) > 0 {
                // Dense inode numbers on two devices: clusters the hash must spread.
                let id = EntryID(device: UInt64.random(in: 1...2, using: &generator), inode: UInt64.random(in: 2...5_000, using: &generator))
                guard !model.contains(id) else { continue }
                try ledger.addFile(id, parent: root, size: 1, allocated: 4096)
                model.insert(id)
                live.append(id)
            } else {
                let index = Int.random(in: 0..<live.count, using: &generator)
                let id = live.remove(at: index)
                try ledger.removeLink(id, parent: root)
                model.remove(id)
            }
            if step % 997 == 0 {
                for id in model { XCTAssertTrue(ledger.contains(id), "\(id) lost at step \(step)") }
                XCTAssertEqual(ledger.identities.count, model.count)
                XCTAssertFalse(ledger.contains(EntryID(device: 3, inode: 7)))
            }
        }
        for id in model { XCTAssertTrue(ledger.contains(id)) }
        XCTAssertEqual(ledger.invariantViolations(), [])
    }
}
