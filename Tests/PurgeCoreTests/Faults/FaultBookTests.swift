import PurgeCore
import XCTest

final class FaultBookTests: XCTestCase {
    private func rule(_ line: String) throws -> FaultRule {
        try FaultRule(arguments: FaultRuleFile.words(of: Substring(line)))
    }

    private func call(_ op: FaultOperation, _ path: String, pid: Int32 = 10, command: String? = nil) -> FaultCall {
        FaultCall(operations: FaultCallOperations(op), path: path, pid: pid, command: command)
    }

    func testAfterLetsNThroughAndTimesStops() throws {
        var book = FaultBook()
        let id = book.add(try rule("--op write --path 'Documents/*.db' --errno EIO --after 2 --times 2"), seed: 1)
        let fired = (1...6).map { _ in book.decide(call(.write, "Documents/a.db")) != nil }
        XCTAssertEqual(fired, [false, false, true, true, false, false])
        XCTAssertEqual(book.entries[0].matched, 6)
        XCTAssertEqual(book.entries[0].fired, 2)
        XCTAssertEqual(book.decide(call(.read, "Documents/a.db")), nil, "another operation does not match")
        XCTAssertEqual(book.decide(call(.write, "Documents/b.txt")), nil)
        XCTAssertEqual(book.entries[0].matched, 6, "calls that do not match are not counted")
        XCTAssertTrue(book.clear(id))
        XCTAssertFalse(book.clear(id))
        XCTAssertTrue(book.isEmpty)
    }

    func testTheSameSeedRepeatsTheDrawsExactly() throws {
        func run(seed: UInt64) throws -> [Bool] {
            var book = FaultBook()
            book.add(try rule("--op open --path '**' --errno EIO --probability 0.5 --seed \(seed)"), seed: 0)
            return (0..<200).map { _ in book.decide(call(.open, "f")) != nil }
        }
        XCTAssertEqual(try run(seed: 42), try run(seed: 42))
        XCTAssertNotEqual(try run(seed: 42), try run(seed: 43))
        let fired = try run(seed: 42).filter { $0 }.count
        XCTAssertTrue((60...140).contains(fired), "about half of 200: \(fired)")
    }

    func testProbabilityIsDrawnOnlyForCallsThatCouldFire() throws {
        // With --after 5, the first five calls draw nothing: the draws that follow are those of a rule without --after.
        var late = FaultBook(), early = FaultBook()
        late.add(try rule("--op read --path a --errno EIO --probability 0.3 --after 5 --seed 7"), seed: 0)
        early.add(try rule("--op read --path a --errno EIO --probability 0.3 --seed 7"), seed: 0)
        for _ in 0..<5 { XCTAssertNil(late.decide(call(.read, "a"))) }
        let a = (0..<50).map { _ in late.decide(call(.read, "a")) != nil }
        let b = (0..<50).map { _ in early.decide(call(.read, "a")) != nil }
        XCTAssertEqual(a, b)
    }

    func testFirstFiringRuleActsAndLaterOnesDoNotSeeTheCall() throws {
        var book = FaultBook()
        let first = book.add(try rule("--op any --path '**' --errno EROFS --times 1"), seed: 0)
        let second = book.add(try rule("--op write --path a --errno ENOSPC"), seed: 0)
        XCTAssertEqual(book.decide(call(.write, "a")), FaultFiring(rule: first, action: .fail("EROFS")))
        XCTAssertEqual(book.decide(call(.write, "a")), FaultFiring(rule: second, action: .fail("ENOSPC")))
        XCTAssertEqual(book.entries[1].matched, 1)
    }

    func testNarrowerOperationsMatchTheirWiderNames() throws {
        var book = FaultBook()
        book.add(try rule("--op fsync --path '**' --errno EIO"), seed: 0)
        XCTAssertNotNil(book.decide(FaultCall(operations: FaultCallOperations(.fdatasync, also: .fsync), path: "x", pid: 1)))
        var narrow = FaultBook()
        narrow.add(try rule("--op fdatasync --path '**' --errno EIO"), seed: 0)
        XCTAssertNil(narrow.decide(FaultCall(operations: FaultCallOperations(.fsync), path: "x", pid: 1)))
    }

    func testProcessMatchingAndInterest() throws {
        var book = FaultBook()
        XCTAssertNil(book.interest(in: FaultCallOperations(.read), pid: 5), "no rules: nothing to find out")
        book.add(try rule("--op read --path '**' --errno EIO --pid 5"), seed: 0)
        XCTAssertNil(book.interest(in: FaultCallOperations(.read), pid: 6))
        XCTAssertEqual(book.interest(in: FaultCallOperations(.read), pid: 5), FaultInterest(command: false))
        XCTAssertNil(book.decide(call(.read, "a", pid: 6)))
        XCTAssertNotNil(book.decide(call(.read, "a", pid: 5)))
        book.add(try rule("--op write --path '**' --errno EIO --comm cat"), seed: 0)
        XCTAssertEqual(book.interest(in: FaultCallOperations(.write), pid: 6), FaultInterest(command: true))
        XCTAssertNil(book.decide(call(.write, "a", command: "head")))
        XCTAssertNotNil(book.decide(call(.write, "a", command: "cat")))
    }

    func testListingReadsBack() throws {
        var book = FaultBook()
        book.add(try rule("--op write --path 'My Documents/*.db' --short-write"), seed: 77)
        book.add(try rule("--op read --path a --delay 20ms --seed 3"), seed: 5)
        _ = book.decide(call(.write, "My Documents/x.db"))
        let listings = try FaultListing.parse(book.listing)
        XCTAssertEqual(listings.map(\.id), [1, 2])
        XCTAssertEqual(listings[0].matched, 1)
        XCTAssertEqual(listings[0].fired, 1)
        XCTAssertEqual(listings[0].rule.seed, 77, "a rule without a seed gets the one given")
        XCTAssertEqual(listings[1].rule.seed, 3, "a rule's own seed is kept")
        XCTAssertEqual(listings[1].rule.action, .delay(nanoseconds: 20_000_000))
    }

    /// A mount matches paths on a copy of its book, outside the lock that
    /// `clear` takes, then counts: a rule cleared in between is not counted,
    /// one added in between does not see the call.
    func testMatchingOnACopyThenCountingSeesClearsInBetween() throws {
        var book = FaultBook()
        let first = book.add(try rule("--op lookup --path '**' --errno EIO"), seed: 1)
        let second = book.add(try rule("--op lookup --path 'a/*' --errno ENOENT"), seed: 1)
        let lookup = call(.lookup, "a/b")
        let matching = book.matching(lookup)
        XCTAssertEqual(matching, [first, second])
        XCTAssertEqual(book.matching(call(.lookup, "c")), [first])
        XCTAssertTrue(book.clear(first))
        let third = book.add(try rule("--op lookup --path '**' --errno EPERM"), seed: 1)
        XCTAssertEqual(book.decide(lookup, matching: matching), FaultFiring(rule: second, action: .fail("ENOENT")))
        XCTAssertEqual(book.entries.first { $0.id == third }?.matched, 0)
        XCTAssertNil(book.decide(lookup, matching: []))
    }
}
