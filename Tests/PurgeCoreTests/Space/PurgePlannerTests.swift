@testable import PurgeCore
import TestSupport
import XCTest

final class PurgePlannerTests: XCTestCase {
    typealias C = Container

    /// Files 10... in tmp, 100 bytes each, used in the given order.
    func ledger(usingInOrder order: [UInt64]) throws -> Ledger {
        var ledger = try C.make()
        for n in order.sorted() { try ledger.addFile(entry(n), parent: C.tmp, size: 1, allocated: 100) }
        for n in order { try ledger.markUsed(entry(n)) }
        return ledger
    }

    func testLeastRecentlyUsedFirstStoppingOnceEnough() throws {
        let ledger = try ledger(usingInOrder: [14, 11, 13, 10, 12])
        let plan = PurgePlanner.plan(.bytes(250), in: ledger)
        XCTAssertEqual(plan.victims.map(\.file), [entry(14), entry(11), entry(13)])
        XCTAssertEqual(plan.plannedBytes, 300)
        XCTAssertTrue(plan.meetsGoal)
        XCTAssertEqual(plan.examinedItems, 3)
        XCTAssertEqual(plan.victims[0].action, .delete)
        XCTAssertEqual(plan.victims[0].directories, [C.tmp])
        XCTAssertEqual(PurgePlanner.plan(.bytes(0), in: ledger).victims, [])
        let short = PurgePlanner.plan(.bytes(10_000), in: ledger)
        XCTAssertEqual(short.victims.count, 5)
        XCTAssertFalse(short.meetsGoal)
    }

    func testNeverAFileOutsideAZonePinnedOrOpen() throws {
        var ledger = try C.make()
        try ledger.addFile(entry(10), parent: C.documents, size: 1, allocated: 100)
        try ledger.addFile(entry(11), parent: C.library, size: 1, allocated: 100)
        try ledger.addFile(entry(12), parent: C.caches, size: 1, allocated: 100)
        try ledger.addFile(entry(13), parent: C.caches, size: 1, allocated: 100)
        try ledger.addFile(entry(14), parent: C.tmp, size: 1, allocated: 100)
        try ledger.addFile(entry(15), parent: C.tmp, size: 1, allocated: 100)
        try ledger.addLink(entry(15), parent: C.documents) // one name outside: not in a zone
        try ledger.setPinned(entry(12), true)
        try ledger.open(entry(13))
        XCTAssertEqual(PurgePlanner.plan(.all, in: ledger).victims.map(\.file), [entry(14)])
        try ledger.close(entry(13))
        try ledger.removeLink(entry(15), parent: C.documents)
        XCTAssertEqual(Set(PurgePlanner.plan(.all, in: ledger).victims.map(\.file)), [entry(13), entry(14), entry(15)])
    }

    func testAGroupGoesAsOneItemAgedByItsNewestFile() throws {
        var ledger = try C.make()
        let group = entry(20), inner = entry(21)
        try ledger.addDirectory(group, parent: C.caches)
        try ledger.addDirectory(inner, parent: group)
        try ledger.setGroup(group, true)
        try ledger.addFile(entry(30), parent: group, size: 1, allocated: 100)  // oldest of all
        try ledger.addFile(entry(40), parent: C.tmp, size: 1, allocated: 100)
        try ledger.addFile(entry(31), parent: inner, size: 1, allocated: 100)  // the group's newest
        try ledger.addFile(entry(41), parent: C.tmp, size: 1, allocated: 100)
        XCTAssertEqual(ledger.purgeOrderCount, 3, "two files and one group")
        var plan = PurgePlanner.plan(.bytes(1), in: ledger)
        XCTAssertEqual(plan.victims.map(\.file), [entry(40)], "the group is as young as entry 31")
        plan = PurgePlanner.plan(.bytes(150), in: ledger)
        XCTAssertEqual(plan.victims.map(\.file), [entry(40), entry(30), entry(31)], "the whole group, oldest member first")
        XCTAssertEqual(plan.victims[1].group, group)
        XCTAssertEqual(plan.plannedBytes, 300)
        // Using a member makes the whole group young.
        try ledger.markUsed(entry(30))
        XCTAssertEqual(PurgePlanner.plan(.all, in: ledger).victims.map(\.file), [entry(40), entry(41), entry(31), entry(30)])
        // An open member stays; the rest of the group still goes.
        try ledger.open(entry(31))
        XCTAssertEqual(PurgePlanner.plan(.all, in: ledger).victims.map(\.file), [entry(40), entry(41), entry(30)])
        assertConsistent(ledger)
    }

    func testTombstonesTruncateInsteadOfDeleting() throws {
        var ledger = try C.make()
        let stones = entry(20)
        try ledger.addDirectory(stones, parent: C.caches)
        try ledger.setTombstone(stones, true)
        try ledger.addFile(entry(30), parent: stones, size: 5000, allocated: 8192)
        try ledger.addFile(entry(31), parent: C.caches, size: 1, allocated: 100)
        let plan = PurgePlanner.plan(.all, in: ledger)
        XCTAssertEqual(plan.victims.map(\.action), [.truncate, .delete])
        XCTAssertEqual(plan.filesByDirectory().map(\.directory), [stones, C.caches])
        for victim in plan.victims { try ledger.purged(victim) }
        XCTAssertTrue(ledger.contains(entry(30)), "the name stays")
        XCTAssertEqual(try ledger.file(entry(30)).size, 0)
        XCTAssertFalse(ledger.contains(entry(31)))
        XCTAssertEqual(PurgePlanner.plan(.all, in: ledger).victims, [], "nothing left to do, not a loop")
        XCTAssertEqual(ledger.rootTotals.purgeable, 0)
        assertConsistent(ledger)
    }

    func testAFailedVictimIsSkippedAndTheRestReplanned() throws {
        var ledger = try ledger(usingInOrder: [10, 11, 12, 13])
        let plan = PurgePlanner.plan(.bytes(200), in: ledger)
        XCTAssertEqual(plan.victims.map(\.file), [entry(10), entry(11)])
        // The adapter purges 10; 11 fails (say EBUSY on the backing store).
        try ledger.purged(plan.victims[0])
        let failed: Set<EntryID> = [entry(11)]
        let rest = PurgePlanner.plan(.bytes(100), in: ledger, excluding: failed)
        XCTAssertEqual(rest.victims.map(\.file), [entry(12)])
        assertConsistent(ledger)
    }

    func testAVictimIsRecheckedBeforeItIsPurged() throws {
        var ledger = try ledger(usingInOrder: [10, 11])
        let plan = PurgePlanner.plan(.all, in: ledger)
        XCTAssertTrue(plan.victims.allSatisfy(ledger.canPurge))
        try ledger.open(entry(10))
        XCTAssertFalse(ledger.canPurge(plan.victims[0]), "opened since the plan")
        try ledger.addLink(entry(11), parent: C.caches)
        XCTAssertFalse(ledger.canPurge(plan.victims[1]), "a new name since the plan")
        try ledger.removeLink(entry(11), parent: C.tmp)
        try ledger.removeLink(entry(11), parent: C.caches)
        XCTAssertFalse(ledger.canPurge(plan.victims[1]), "gone since the plan")
    }

    func testHardLinkedVictimListsEveryName() throws {
        var ledger = try C.make()
        try ledger.addFile(entry(10), parent: C.tmp, size: 1, allocated: 100)
        try ledger.addLink(entry(10), parent: C.caches)
        try ledger.addLink(entry(10), parent: C.tmp)
        let plan = PurgePlanner.plan(.all, in: ledger)
        XCTAssertEqual(plan.victims.count, 1)
        XCTAssertEqual(plan.victims[0].directories.sorted(), [C.caches, C.tmp, C.tmp].sorted())
        XCTAssertEqual(plan.filesByDirectory().map(\.files.count).reduce(0, +), 3)
        try ledger.purged(plan.victims[0])
        XCTAssertFalse(ledger.contains(entry(10)))
        assertConsistent(ledger)
    }

    /// Random trees from the random ledger runs; for each, plans for several
    /// goals are checked against the naive model, then executed.
    func testPlansOverRandomTrees() throws {
        for seed: UInt64 in 100..<112 {
            var run = RandomRun(seed: seed)
            try run.go(steps: 250, checkEvery: 50)
            let model = run.model.derived()
            let total = run.ledger.rootTotals.purgeable
            var random = SeededGenerator(seed: seed)
            for need in [0, 1, total / 3, total, total + 1, UInt64.random(in: 0...max(total, 1), using: &random)] {
                let plan = PurgePlanner.plan(.bytes(need), in: run.ledger)
                let context = "seed \(seed) need \(need)"
                XCTAssertEqual(Set(plan.victims.map(\.file)).count, plan.victims.count, context)
                XCTAssertEqual(plan.plannedBytes, plan.victims.reduce(0) { $0 + $1.bytes }, context)
                var previous: UInt64 = 0
                for victim in plan.victims {
                    XCTAssertTrue(model.inZone(victim.file), "\(context): \(victim.file) outside a zone")
                    XCTAssertFalse(model.pinned(victim.file), context)
                    XCTAssertEqual(run.model.files[victim.file]!.opens, 0, context)
                    XCTAssertGreaterThanOrEqual(model.orderStamp(victim.file), previous, context)
                    previous = model.orderStamp(victim.file)
                }
                if plan.meetsGoal, let last = plan.victims.last {
                    // Stopped as soon as enough: without the last item it was not enough.
                    let lastItem = plan.victims.filter { $0.group != nil && $0.group == last.group }
                    let withoutLast = plan.plannedBytes - (last.group == nil ? last.bytes : lastItem.reduce(0) { $0 + $1.bytes })
                    XCTAssertLessThan(withoutLast, need, context)
                } else if !plan.meetsGoal {
                    XCTAssertEqual(plan.plannedBytes, total, "\(context): fell short while bytes were left")
                }
            }
            // Execute a plan the way the adapter would.
            let plan = PurgePlanner.plan(.bytes(total / 2), in: run.ledger)
            let before = run.ledger.rootTotals.purgeable
            for victim in plan.victims where run.ledger.canPurge(victim) { try run.ledger.purged(victim) }
            XCTAssertEqual(run.ledger.rootTotals.purgeable, before - plan.plannedBytes, "seed \(seed)")
            assertConsistent(run.ledger, "seed \(seed)")
        }
    }
}
