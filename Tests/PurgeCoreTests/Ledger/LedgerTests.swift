@testable import PurgeCore
import XCTest

/// A small container: root, Library/Caches (zone), Documents, tmp (zone).
struct Container {
    static let root = entry(1), library = entry(2), caches = entry(3), documents = entry(4), tmp = entry(5)

    static func make() throws -> Ledger {
        var ledger = Ledger()
        try ledger.addDirectory(root, parent: nil)
        try ledger.addDirectory(library, parent: root)
        try ledger.addDirectory(caches, parent: library)
        try ledger.addDirectory(documents, parent: root)
        try ledger.addDirectory(tmp, parent: root)
        try ledger.setZone(caches, true)
        try ledger.setZone(tmp, true)
        return ledger
    }
}

final class LedgerTests: XCTestCase {
    typealias C = Container

    func testTotalsAddUpTheSubtree() throws {
        var ledger = try C.make()
        try ledger.addFile(entry(10), parent: C.caches, size: 100, allocated: 4096)
        try ledger.addFile(entry(11), parent: C.documents, size: 5000, allocated: 8192)
        try ledger.addFile(entry(12), parent: C.tmp, size: 0, allocated: 0)
        XCTAssertEqual(ledger.rootTotals, Totals(size: 5100, files: 3, allocated: 12288, purgeable: 4096, purgeableFiles: 2))
        XCTAssertEqual(try ledger.totals(of: C.library), Totals(size: 100, files: 1, allocated: 4096, purgeable: 4096, purgeableFiles: 1))
        XCTAssertEqual(try ledger.totals(of: C.documents).purgeable, 0)
        XCTAssertEqual(ledger.usage, 12288)
        assertConsistent(ledger)
    }

    func testUpdatePropagatesUpTheChain() throws {
        var ledger = try C.make()
        try ledger.addFile(entry(10), parent: C.caches, size: 100, allocated: 4096)
        try ledger.update(entry(10), size: 10_000, allocated: 12_288)
        XCTAssertEqual(try ledger.totals(of: C.library).allocated, 12_288)
        XCTAssertEqual(ledger.rootTotals.purgeable, 12_288)
        XCTAssertEqual(try ledger.file(entry(10)).size, 10_000)
        assertConsistent(ledger)
    }

    func testHardLinksCountOnceInEveryDirectoryAboveAName() throws {
        var ledger = try C.make()
        try ledger.addFile(entry(10), parent: C.caches, size: 100, allocated: 4096)
        try ledger.addLink(entry(10), parent: C.documents)
        try ledger.addLink(entry(10), parent: C.library)
        XCTAssertEqual(ledger.rootTotals.files, 1)
        XCTAssertEqual(ledger.rootTotals.allocated, 4096)
        XCTAssertEqual(try ledger.totals(of: C.library).files, 1, "two names below Library, counted once")
        XCTAssertEqual(try ledger.totals(of: C.caches).files, 1)
        XCTAssertEqual(try ledger.totals(of: C.documents).files, 1)
        XCTAssertEqual(try ledger.file(entry(10)).links, 3)
        // A name outside every zone keeps the file from purging.
        XCTAssertFalse(try ledger.file(entry(10)).isInZone)
        XCTAssertEqual(ledger.rootTotals.purgeable, 0)
        try ledger.removeLink(entry(10), parent: C.documents)
        try ledger.removeLink(entry(10), parent: C.library)
        XCTAssertTrue(try ledger.file(entry(10)).isCandidate)
        XCTAssertEqual(ledger.rootTotals.purgeable, 4096)
        XCTAssertEqual(try ledger.totals(of: C.documents), .zero)
        assertConsistent(ledger)
    }

    func testTwoNamesInOneDirectoryAndRemovingTheFirstName() throws {
        var ledger = try C.make()
        try ledger.addFile(entry(10), parent: C.documents, size: 1, allocated: 4096)
        try ledger.addLink(entry(10), parent: C.documents)
        try ledger.addLink(entry(10), parent: C.tmp)
        XCTAssertEqual(try ledger.totals(of: C.documents).files, 1)
        try ledger.removeLink(entry(10), parent: C.documents)
        try ledger.removeLink(entry(10), parent: C.documents)
        XCTAssertEqual(try ledger.linkDirectories(of: entry(10)), [C.tmp])
        XCTAssertTrue(try ledger.file(entry(10)).isCandidate)
        assertConsistent(ledger)
        try ledger.removeLink(entry(10), parent: C.tmp)
        XCTAssertFalse(ledger.contains(entry(10)))
        XCTAssertEqual(ledger.rootTotals, .zero)
        assertConsistent(ledger)
    }

    /// An open that found no entry (the entry made after it) is not counted;
    /// its close throws and leaves the entry as it was (it trapped, taking
    /// the daemon down under a clone stress with purges).
    func testACloseWithNoOpenCountedThrowsAndChangesNothing() throws {
        var ledger = try C.make()
        XCTAssertThrowsError(try ledger.open(entry(10))) { XCTAssertEqual($0 as? PurgeCoreError, .unknownEntry(entry(10))) }
        try ledger.addFile(entry(10), parent: C.caches, size: 100, allocated: 4096)
        let before = ledger.rootTotals
        XCTAssertThrowsError(try ledger.close(entry(10))) { XCTAssertEqual($0 as? PurgeCoreError, .notOpen(entry(10))) }
        XCTAssertEqual(ledger.rootTotals, before)
        XCTAssertTrue(ledger.isPurgeable(entry(10)), "still a candidate: no open is counted")
        assertConsistent(ledger)
    }

    func testUnlinkedOpenFileLeavesTheTotalsAndGoesAtLastClose() throws {
        var ledger = try C.make()
        try ledger.addFile(entry(10), parent: C.tmp, size: 10, allocated: 4096)
        try ledger.open(entry(10))
        try ledger.open(entry(10))
        XCTAssertEqual(ledger.rootTotals.purgeable, 0, "open files are not candidates")
        try ledger.removeLink(entry(10), parent: C.tmp)
        XCTAssertEqual(ledger.rootTotals, .zero, "like du: gone from the totals at once")
        XCTAssertEqual(ledger.unlinkedOpenAllocated, 4096)
        XCTAssertEqual(ledger.usage, 4096, "its blocks are still on the device")
        try ledger.update(entry(10), size: 20_000, allocated: 20_480)
        XCTAssertEqual(ledger.unlinkedOpenAllocated, 20_480)
        XCTAssertEqual(try ledger.file(entry(10)).links, 0)
        assertConsistent(ledger)
        try ledger.close(entry(10))
        XCTAssertTrue(ledger.contains(entry(10)))
        try ledger.close(entry(10))
        XCTAssertFalse(ledger.contains(entry(10)))
        XCTAssertEqual(ledger.usage, 0)
        assertConsistent(ledger)
    }

    func testMovingFilesAcrossZones() throws {
        var ledger = try C.make()
        try ledger.addFile(entry(10), parent: C.documents, size: 10, allocated: 4096)
        XCTAssertEqual(ledger.rootTotals.purgeable, 0)
        try ledger.move(entry(10), from: C.documents, to: C.caches)
        XCTAssertEqual(ledger.rootTotals.purgeable, 4096)
        XCTAssertEqual(try ledger.totals(of: C.documents), .zero)
        XCTAssertEqual(try ledger.totals(of: C.library).files, 1)
        XCTAssertEqual(ledger.purgeOrderCount, 1)
        try ledger.move(entry(10), from: C.caches, to: C.documents)
        XCTAssertEqual(ledger.rootTotals.purgeable, 0)
        XCTAssertEqual(ledger.purgeOrderCount, 0)
        assertConsistent(ledger)
    }

    func testMovingDirectoriesIntoAndOutOfZones() throws {
        var ledger = try C.make()
        let project = entry(20), sub = entry(21)
        try ledger.addDirectory(project, parent: C.documents)
        try ledger.addDirectory(sub, parent: project)
        try ledger.addFile(entry(30), parent: project, size: 1, allocated: 100)
        try ledger.addFile(entry(31), parent: sub, size: 2, allocated: 200)
        try ledger.move(project, from: C.documents, to: C.caches)
        XCTAssertEqual(try ledger.totals(of: C.caches), Totals(size: 3, files: 2, allocated: 300, purgeable: 300, purgeableFiles: 2))
        XCTAssertEqual(try ledger.totals(of: C.documents), .zero)
        XCTAssertTrue(try ledger.file(entry(31)).isInZone)
        assertConsistent(ledger)
        // Within one zone: the fast path carries the totals.
        try ledger.move(sub, from: project, to: C.caches)
        XCTAssertEqual(try ledger.totals(of: project).files, 1)
        XCTAssertEqual(try ledger.totals(of: C.caches).files, 2)
        assertConsistent(ledger)
        try ledger.move(project, from: C.caches, to: C.root)
        XCTAssertEqual(ledger.rootTotals.purgeable, 200)
        XCTAssertFalse(try ledger.file(entry(30)).isInZone)
        assertConsistent(ledger)
    }

    func testMovingADirectoryHoldingOneOfTwoNamesOfAFile() throws {
        var ledger = try C.make()
        let a = entry(20), x = entry(21), b = entry(22)
        try ledger.addDirectory(a, parent: C.root)
        try ledger.addDirectory(x, parent: a)
        try ledger.addDirectory(b, parent: C.root)
        try ledger.addFile(entry(30), parent: x, size: 7, allocated: 4096)
        try ledger.addLink(entry(30), parent: b)
        try ledger.move(x, from: a, to: b)
        XCTAssertEqual(try ledger.totals(of: b).files, 1, "both names below b now, counted once")
        XCTAssertEqual(try ledger.totals(of: a).files, 0)
        XCTAssertEqual(ledger.rootTotals.files, 1)
        assertConsistent(ledger)
    }

    func testPinsOnFilesAndDirectories() throws {
        var ledger = try C.make()
        let keep = entry(20)
        try ledger.addDirectory(keep, parent: C.caches)
        try ledger.addFile(entry(30), parent: keep, size: 1, allocated: 100)
        try ledger.addFile(entry(31), parent: C.caches, size: 1, allocated: 200)
        try ledger.setPinned(entry(31), true)
        XCTAssertEqual(ledger.rootTotals.purgeable, 100)
        try ledger.setPinned(keep, true)
        XCTAssertEqual(ledger.rootTotals.purgeable, 0)
        XCTAssertTrue(try ledger.file(entry(30)).isProtectedByPin)
        XCTAssertFalse(try ledger.file(entry(30)).isPinned)
        XCTAssertTrue(try ledger.file(entry(30)).isInZone, "pinned files are still in the zone")
        XCTAssertEqual(ledger.purgeOrderCount, 0)
        try ledger.setPinned(keep, false)
        try ledger.setPinned(entry(31), false)
        XCTAssertEqual(ledger.rootTotals.purgeable, 300)
        XCTAssertEqual(ledger.purgeOrderCount, 2)
        assertConsistent(ledger)
    }

    func testOpenFilesAreNotCandidates() throws {
        var ledger = try C.make()
        try ledger.addFile(entry(30), parent: C.tmp, size: 1, allocated: 100)
        try ledger.open(entry(30))
        XCTAssertFalse(try ledger.file(entry(30)).isCandidate)
        XCTAssertEqual(try ledger.file(entry(30)).openCount, 1)
        XCTAssertEqual(ledger.purgeOrderCount, 0)
        try ledger.close(entry(30))
        XCTAssertTrue(try ledger.file(entry(30)).isCandidate)
        XCTAssertEqual(ledger.purgeOrderCount, 1)
        assertConsistent(ledger)
    }

    func testTombstonedFileTruncatedToNothingLeavesThePurgeOrder() throws {
        var ledger = try C.make()
        try ledger.setTombstone(C.tmp, true)
        try ledger.addFile(entry(30), parent: C.tmp, size: 10, allocated: 4096)
        XCTAssertTrue(try ledger.file(entry(30)).isTombstoned)
        XCTAssertEqual(ledger.purgeOrderCount, 1)
        try ledger.update(entry(30), size: 0, allocated: 0)
        XCTAssertEqual(ledger.purgeOrderCount, 0)
        XCTAssertTrue(try ledger.file(entry(30)).isCandidate, "still a candidate, just nothing left to do")
        XCTAssertEqual(ledger.rootTotals.purgeableFiles, 0)
        assertConsistent(ledger)
    }

    func testCloneSavingsHook() throws {
        var ledger = try C.make()
        try ledger.addFile(entry(30), parent: C.documents, size: 8192, allocated: 8192)
        try ledger.addFile(entry(31), parent: C.documents, size: 8192, allocated: 0, lastUsed: 1)
        try ledger.update(entry(31), size: 8192, allocated: 0, cloneSavings: 8192)
        XCTAssertEqual(ledger.rootTotals.allocated, 8192)
        XCTAssertEqual(ledger.rootTotals.cloneSavings, 8192)
        XCTAssertEqual(ledger.rootTotals.size, 16_384)
        try ledger.update(entry(31), size: 8192, allocated: 8192, cloneSavings: 0)
        XCTAssertEqual(ledger.rootTotals.cloneSavings, 0)
        assertConsistent(ledger)
    }

    func testRemovingDirectories() throws {
        var ledger = try C.make()
        let d = entry(20)
        try ledger.addDirectory(d, parent: C.tmp)
        try ledger.addFile(entry(30), parent: d, size: 1, allocated: 1)
        XCTAssertThrowsError(try ledger.removeDirectory(d)) { XCTAssertEqual($0 as? PurgeCoreError, .directoryNotEmpty(d)) }
        XCTAssertThrowsError(try ledger.removeDirectory(C.tmp)) { XCTAssertEqual($0 as? PurgeCoreError, .directoryNotEmpty(C.tmp)) }
        try ledger.removeLink(entry(30), parent: d)
        try ledger.removeDirectory(d)
        XCTAssertFalse(ledger.contains(d))
        try ledger.addDirectory(d, parent: C.documents)
        XCTAssertFalse(try ledger.directory(d).isInZone)
        assertConsistent(ledger)
    }

    func testErrorsAndTheirPrecedence() throws {
        var ledger = try C.make()
        try ledger.addFile(entry(30), parent: C.tmp, size: 1, allocated: 1)
        func expect(_ error: PurgeCoreError, _ body: () throws -> Void, line: UInt = #line) {
            XCTAssertThrowsError(try body(), line: line) { XCTAssertEqual($0 as? PurgeCoreError, error, line: line) }
        }
        expect(.unknownEntry(entry(99))) { try ledger.addFile(entry(30), parent: entry(99), size: 0, allocated: 0) }
        expect(.notADirectory(entry(30))) { try ledger.addFile(entry(31), parent: entry(30), size: 0, allocated: 0) }
        expect(.entryExists(entry(30))) { try ledger.addFile(entry(30), parent: C.tmp, size: 0, allocated: 0) }
        expect(.entryExists(C.tmp)) { try ledger.addDirectory(C.tmp, parent: C.root) }
        expect(.rootExists(C.root)) { try ledger.addDirectory(entry(40), parent: nil) }
        expect(.notAFile(C.tmp)) { try ledger.update(C.tmp, size: 0, allocated: 0) }
        expect(.notAFile(C.tmp)) { try ledger.markUsed(C.tmp) }
        expect(.notADirectory(entry(30))) { try ledger.setZone(entry(30), true) }
        expect(.unknownEntry(entry(99))) { try ledger.move(entry(99), from: C.root, to: C.tmp) }
        expect(.notLinked(entry(30), directory: C.documents)) { try ledger.removeLink(entry(30), parent: C.documents) }
        expect(.notLinked(entry(30), directory: C.documents)) { try ledger.move(entry(30), from: C.documents, to: C.caches) }
        expect(.notLinked(C.caches, directory: C.root)) { try ledger.move(C.caches, from: C.root, to: C.tmp) }
        expect(.wouldCreateCycle(C.library)) { try ledger.move(C.library, from: C.root, to: C.caches) }
        expect(.wouldCreateCycle(C.library)) { try ledger.move(C.library, from: C.root, to: C.library) }
        assertConsistent(ledger)
        XCTAssertEqual(ledger.rootTotals.files, 1, "refused requests change nothing")
    }

    func testStampsAreStrictlyIncreasingAndFollowTheTimeSource() throws {
        let clock = RecencyClock(time: { 1_000 })
        var ledger = Ledger(clock: clock)
        try ledger.addDirectory(entry(1), parent: nil)
        try ledger.addFile(entry(2), parent: entry(1), size: 0, allocated: 0)
        try ledger.addFile(entry(3), parent: entry(1), size: 0, allocated: 0)
        let a = try ledger.markUsed(entry(2)), b = try ledger.markUsed(entry(3))
        XCTAssertEqual(try ledger.file(entry(2)).lastUsed, a)
        XCTAssertGreaterThan(b, a, "same time, still ordered")
        XCTAssertGreaterThanOrEqual(a, 1_000)
        try ledger.addFile(entry(4), parent: entry(1), size: 0, allocated: 0, lastUsed: 50_000)
        XCTAssertGreaterThan(try ledger.markUsed(entry(2)), 50_000, "stamps from elsewhere move the clock")
    }
}
