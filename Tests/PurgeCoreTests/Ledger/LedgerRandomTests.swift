@testable import PurgeCore
import TestSupport
import XCTest

/// Random operation sequences, applied to the ledger and to the naive
/// `ReferenceModel` side by side; after every step every directory's totals,
/// every file's state and the ledger's own invariants are compared, and
/// every few steps the full purge order.
final class LedgerRandomTests: XCTestCase {
    // Sized for a debug build: a few thousand operations in a few seconds.
    func testRandomSequencesMatchTheReferenceModel() throws {
        for seed: UInt64 in 1...8 {
            var run = RandomRun(seed: seed)
            try run.go(steps: 500, checkEvery: 2)
        }
    }

    func testLongSequenceWithFewDirectories() throws {
        var run = RandomRun(seed: 0xC0FFEE, directoryWeight: 2)
        try run.go(steps: 2_000, checkEvery: 10)
    }
}

struct RandomRun {
    var random: SeededGenerator
    var ledger = Ledger()
    var model = ReferenceModel()
    var nextInode: UInt64 = 100
    let directoryWeight: Int
    let seed: UInt64
    var step = 0

    init(seed: UInt64, directoryWeight: Int = 6) {
        self.seed = seed
        self.random = SeededGenerator(seed: seed)
        self.directoryWeight = directoryWeight
    }

    mutating func go(steps: Int, checkEvery: Int = 1) throws {
        let root = entry(1)
        try ledger.addDirectory(root, parent: nil)
        model.directories[root] = .init(parent: nil)
        for s in 0..<steps {
            step = s
            try randomStep()
            model.raiseGroups()
            if s % checkEvery == 0 { compare() }
            if s % 25 == 0 { comparePurgeOrder() }
        }
        compare()
        comparePurgeOrder()
    }

    var context: String { "seed \(seed) step \(step)" }

    mutating func pick<T>(_ values: [T]) -> T? {
        values.isEmpty ? nil : values[Int.random(in: 0..<values.count, using: &random)]
    }

    mutating func bytes() -> UInt64 {
        // Zero now and then: empty files and truncated tombstones matter.
        Bool.random(using: &random) && Bool.random(using: &random) ? 0 : UInt64.random(in: 1...1 << 20, using: &random)
    }

    mutating func randomStep() throws {
        let directories = model.directories.keys.sorted()
        let files = model.files.keys.sorted()
        let linked = files.filter { !model.files[$0]!.links.isEmpty }
        let weights: [(Int, Int)] = [
            (0, directoryWeight), (1, 12), (2, 3), (3, 8), (4, 6), (5, 3), (6, 10), (7, 2),
            (8, 3), (9, 4), (10, 3), (11, 3), (12, 4), (13, 4), (14, 8), (15, 2),
        ]
        var roll = Int.random(in: 0..<weights.reduce(0) { $0 + $1.1 }, using: &random)
        var operation = 0
        for (op, weight) in weights {
            if roll < weight { operation = op; break }
            roll -= weight
        }
        switch operation {
        case 0: // mkdir
            let parent = pick(directories)!
            let id = newEntry()
            try ledger.addDirectory(id, parent: parent)
            model.directories[id] = .init(parent: parent)
        case 1: // create
            let parent = pick(directories)!
            let id = newEntry()
            let size = bytes(), allocated = bytes()
            try ledger.addFile(id, parent: parent, size: size, allocated: allocated)
            model.files[id] = .init(links: [parent], size: size, allocated: allocated,
                                    lastUsed: try ledger.file(id).lastUsed)
        case 2: // link
            guard let f = pick(files), let parent = pick(directories) else { return }
            try ledger.addLink(f, parent: parent)
            model.files[f]!.links.append(parent)
        case 3: // unlink one name
            guard let f = pick(linked) else { return }
            let parent = pick(model.files[f]!.links)!
            try ledger.removeLink(f, parent: parent)
            model.files[f]!.links.remove(at: model.files[f]!.links.firstIndex(of: parent)!)
            if model.files[f]!.links.isEmpty && model.files[f]!.opens == 0 { model.files[f] = nil }
        case 4: // rename a file's name
            guard let f = pick(linked), let to = pick(directories) else { return }
            let from = pick(model.files[f]!.links)!
            try ledger.move(f, from: from, to: to)
            let position = model.files[f]!.links.firstIndex(of: from)!
            model.files[f]!.links[position] = to
        case 5: // rename a directory
            guard let d = pick(directories.filter { $0 != entry(1) }), let to = pick(directories) else { return }
            let from = model.directories[d]!.parent!
            if model.isWithin(to, d) {
                XCTAssertThrowsError(try ledger.move(d, from: from, to: to), context)
            } else {
                try ledger.move(d, from: from, to: to)
                model.directories[d]!.parent = to
            }
        case 6: // write or truncate
            guard let f = pick(files) else { return }
            let size = bytes(), allocated = bytes()
            try ledger.update(f, size: size, allocated: allocated)
            model.files[f]!.size = size
            model.files[f]!.allocated = allocated
        case 7: // rmdir
            let empty = directories.filter { d in
                d != entry(1) && !model.directories.values.contains { $0.parent == d }
                    && !model.files.values.contains { $0.links.contains(d) }
            }
            if let busy = pick(directories.filter { d in model.files.values.contains { $0.links.contains(d) } }) {
                XCTAssertThrowsError(try ledger.removeDirectory(busy), context)
            }
            guard let d = pick(empty) else { return }
            try ledger.removeDirectory(d)
            model.directories[d] = nil
        case 8: // zone
            guard let d = pick(directories) else { return }
            let on = Bool.random(using: &random)
            try ledger.setZone(d, on)
            model.directories[d]!.zone = on
        case 9: // pin a file or a directory
            let on = Int.random(in: 0..<3, using: &random) == 0
            if Bool.random(using: &random), let f = pick(files) {
                try ledger.setPinned(f, on)
                model.files[f]!.pinned = on
            } else if let d = pick(directories) {
                try ledger.setPinned(d, on)
                model.directories[d]!.pinned = on
            }
        case 10: // group
            guard let d = pick(directories) else { return }
            let on = Bool.random(using: &random)
            try ledger.setGroup(d, on)
            if on && !model.directories[d]!.group { model.directories[d]!.groupStamp = 0 }
            model.directories[d]!.group = on
        case 11: // tombstone
            guard let d = pick(directories) else { return }
            let on = Bool.random(using: &random)
            try ledger.setTombstone(d, on)
            model.directories[d]!.tombstone = on
        case 12: // open
            guard let f = pick(files) else { return }
            try ledger.open(f)
            model.files[f]!.opens += 1
        case 13: // close
            guard let f = pick(files.filter { model.files[$0]!.opens > 0 }) else { return }
            try ledger.close(f)
            model.files[f]!.opens -= 1
            if model.files[f]!.links.isEmpty && model.files[f]!.opens == 0 { model.files[f] = nil }
        case 14: // use
            guard let f = pick(files) else { return }
            let stamp = try ledger.markUsed(f)
            XCTAssertGreaterThan(stamp, model.files.values.map(\.lastUsed).max() ?? 0, context)
            model.files[f]!.lastUsed = stamp
        default: // a request the ledger must refuse without changing anything
            let unknown = entry(1_000_000 + UInt64(step))
            XCTAssertThrowsError(try ledger.addFile(newEntry(), parent: unknown, size: 1, allocated: 1), context)
            if let f = pick(files) {
                XCTAssertThrowsError(try ledger.addDirectory(newEntry(), parent: f), context)
                XCTAssertThrowsError(try ledger.setGroup(f, true), context)
            }
        }
    }

    mutating func newEntry() -> EntryID {
        nextInode += 1
        return entry(nextInode)
    }

    func compare() {
        let model = self.model.derived()
        let problems = ledger.invariantViolations()
        XCTAssert(problems.isEmpty, "\(context): \(problems.prefix(3))")
        for (d, totals) in model.totals() {
            XCTAssertEqual(try ledger.totals(of: d), totals, "\(context): directory \(d)")
        }
        for (f, file) in self.model.files {
            guard let info = try? ledger.file(f) else { return XCTFail("\(context): file \(f) missing") }
            XCTAssertEqual(info.size, file.size, context)
            XCTAssertEqual(info.allocated, file.allocated, context)
            XCTAssertEqual(info.links, file.links.count, context)
            XCTAssertEqual(info.openCount, file.opens, context)
            XCTAssertEqual(info.lastUsed, file.lastUsed, context)
            XCTAssertEqual(info.isInZone, model.inZone(f), "\(context): zone of \(f)")
            XCTAssertEqual(info.isCandidate, model.candidate(f), "\(context): candidacy of \(f)")
            XCTAssertEqual(info.isTombstoned, model.tombstoned(f), context)
            XCTAssertEqual(info.group, model.group(f), "\(context): group of \(f)")
        }
        XCTAssertEqual(ledger.linkedFileCount, self.model.files.values.filter { !$0.links.isEmpty }.count, context)
        let unlinked = self.model.files.values.filter { $0.links.isEmpty }.reduce(0) { $0 + $1.allocated }
        XCTAssertEqual(ledger.unlinkedOpenAllocated, unlinked, context)
    }

    /// A plan for everything holds every file with purge work exactly once,
    /// in order of its item's age, groups together.
    func comparePurgeOrder() {
        let model = self.model.derived()
        let plan = PurgePlanner.plan(.all, in: ledger)
        let planned = plan.victims.map(\.file)
        XCTAssertEqual(Set(planned).count, planned.count, "\(context): a victim twice")
        XCTAssertEqual(Set(planned), Set(self.model.files.keys.filter { model.work($0) }), "\(context): victims")
        var previous: UInt64 = 0
        var groupsSeen: [EntryID] = []
        for victim in plan.victims {
            XCTAssertTrue(model.candidate(victim.file), "\(context): \(victim.file) is no candidate")
            XCTAssertEqual(victim.group, model.group(victim.file), context)
            XCTAssertEqual(victim.action, model.tombstoned(victim.file) ? .truncate : .delete, context)
            XCTAssertEqual(victim.directories.sorted(), self.model.files[victim.file]!.links.sorted(), context)
            let stamp = model.orderStamp(victim.file)
            XCTAssertGreaterThanOrEqual(stamp, previous, "\(context): out of order at \(victim.file)")
            previous = stamp
            if let group = victim.group, groupsSeen.last != group {
                XCTAssertFalse(groupsSeen.contains(group), "\(context): group \(group) split")
                groupsSeen.append(group)
            }
        }
    }
}
