import FuzzHarness
@testable import PurgeCore
import XCTest

/// The block maps' book and journal: pending records become durable only
/// when taken, the stored form round-trips, a torn last line is ignored,
/// hostile lines are refused with their number, and a journal cut at any
/// point reads back as the records before the cut.
final class BlockMapBookTests: XCTestCase {
    typealias Record = BlockMapRecord
    let block = BlockMap.blockSize
    let one = EntryID(device: 7, inode: 1001), two = EntryID(device: 7, inode: 1002)
    let baseA = EntryID(device: 7, inode: 100), baseB = EntryID(device: 7, inode: 200)

    func decoded(_ text: String) throws -> BlockMapBook {
        try BlockMapBook.decode(Array(text.utf8))
    }

    func refusal(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> Record.Malformed? {
        do {
            _ = try BlockMapBook.decode(Array(text.utf8))
            XCTFail("accepted \(text.debugDescription)", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    /// The records of a short life of two members, each as it was made.
    var history: [Record] {
        [
            .start(member: one, base: baseA, sharedLength: 16 * block, handleType: 1, handle: [0xAB, 0x01, 0xFF]),
            .own(member: one, blocks: 0..<2),
            .start(member: two, base: baseA, sharedLength: 16 * block, handleType: 1, handle: []),
            .own(member: two, blocks: 5..<6),
            .own(member: one, blocks: 9..<12),
            .sharedLength(member: one, length: 10 * block),
            .rebase(member: two, base: baseB),
            .own(member: two, blocks: 15..<16),
            .drop(member: one),
            .start(member: one, base: baseB, sharedLength: 3 * block, handleType: 2, handle: [0]),
        ]
    }

    func testPendingRecordsAreDurableOnlyOnceTakenAndAKillLosesThem() {
        var book = BlockMapBook()
        book.record(history[0])
        book.record(.own(member: one, blocks: 3..<4))
        book.record(.own(member: one, blocks: 4..<6))
        XCTAssertEqual(book.pendingRecords(of: one).count, 2, "adjacent own records merge")
        XCTAssertNil(book.durable[one])
        XCTAssertEqual(book.current(one)?.map.own, BlockRanges([3..<6]))
        let lines = book.takeChanges(of: one)
        XCTAssertEqual(String(decoding: lines, as: UTF8.self), "start 7 1001 7 100 1048576 1 ab01ff\nown 7 1001 3 6\n")
        XCTAssertEqual(book.durable[one]?.map.own, BlockRanges([3..<6]))
        book.record(.own(member: one, blocks: 8..<9))
        book.record(history[2])
        XCTAssertEqual(book.membersWithPending, [one, two])
        _ = book.takeChanges(of: two)
        book.forgetPending()
        XCTAssertFalse(book.hasPending)
        XCTAssertEqual(book.current(one)?.map.own, BlockRanges([3..<6]), "the unsynced block is lost")
        XCTAssertNotNil(book.durable[two])
    }

    /// A member dropped before its records were durable leaves none, and a
    /// `start` replaces what is pending for its member: no record of an
    /// earlier map of the same inode number is replayed in front of it
    /// (before, such an `own` trapped the commit: "no map for member").
    func testAStartOrADropLeavesNoRecordOfAnEarlierMapPending() {
        var book = BlockMapBook()
        book.record(history[0])
        book.record(.own(member: one, blocks: 3..<4))
        XCTAssertFalse(book.recordDrop(of: one), "nothing durable to drop")
        XCTAssertEqual(book.pendingRecords(of: one), [])
        book.record(.own(member: one, blocks: 3..<4))
        book.record(history[9])
        XCTAssertEqual(book.pendingRecords(of: one), [history[9]])
        _ = book.takeChanges(of: one)
        XCTAssertEqual(book.durable[one]?.map, BlockMap(base: baseB, sharedLength: 3 * block))
        book.record(.own(member: one, blocks: 0..<1))
        XCTAssertTrue(book.recordDrop(of: one), "a durable map is dropped")
        XCTAssertEqual(book.pendingRecords(of: one), [.drop(member: one)])
        _ = book.takeChanges(of: one)
        XCTAssertNil(book.durable[one])
    }

    func testTheSnapshotAndTheJournalRoundTrip() throws {
        var book = BlockMapBook()
        var journal: [UInt8] = []
        for record in history {
            book.record(record)
            journal += book.takeChanges()
        }
        let fromJournal = try BlockMapBook.decode(journal)
        XCTAssertEqual(fromJournal, book)
        XCTAssertEqual(try BlockMapBook.decode(book.encoded), book)
        XCTAssertEqual(BlockMapBook(decoding: book.encoded), book)
        XCTAssertEqual(book.durable[two]?.map, {
            var map = BlockMap(base: baseB, sharedLength: 16 * block)
            map.makeOwn(5..<6)
            map.makeOwn(15..<16)
            return map
        }())
        XCTAssertEqual(book.durable[one]?.map, BlockMap(base: baseB, sharedLength: 3 * block))
        XCTAssertEqual(book.durable[one]?.handle, [0])
        XCTAssertEqual(book.membersByBase, [baseB: [one, two]])
        // Snapshot then more journal lines, as RegistryStore hands them.
        var more = book
        more.record(.own(member: two, blocks: 0..<1))
        let tail = more.takeChanges()
        XCTAssertEqual(try BlockMapBook.decode(book.encoded + tail), more)
    }

    func testATornLastLineIsIgnoredWhateverItHolds() throws {
        let whole = "start 7 1001 7 100 655360 1 -\nown 7 1001 1 2\n"
        let book = try decoded(whole)
        XCTAssertEqual(try decoded(whole + "own 7 1001 3 4"), book)
        XCTAssertEqual(try decoded(whole + "own 7 1001 3"), book)
        XCTAssertEqual(try decoded(whole + "garbage \u{1} that would be refused"), book)
        XCTAssertEqual(try decoded(whole + String(repeating: "9", count: 5000)), book)
        XCTAssertEqual(try decoded(""), BlockMapBook())
    }

    /// Every prefix of the journal (a kill may cut it anywhere) reads back
    /// as the records whose lines it holds whole.
    func testAJournalCutAnywhereReadsAsTheRecordsBeforeTheCut() throws {
        var book = BlockMapBook()
        var journal: [UInt8] = []
        var afterRecord: [BlockMapBook] = [BlockMapBook()]
        var boundaries: [Int] = [0]
        for record in history {
            book.record(record)
            journal += book.takeChanges()
            afterRecord.append(book)
            boundaries.append(journal.count)
        }
        for cut in 0...journal.count {
            let whole = boundaries.lastIndex { $0 <= cut }!
            XCTAssertEqual(try BlockMapBook.decode(Array(journal[..<cut])), afterRecord[whole], "cut at byte \(cut)")
        }
    }

    func testHostileLinesAreRefusedWithTheirNumber() {
        let start = "start 7 1001 7 100 655360 1 -\n"
        let cases: [(String, String)] = [
            ("own 7 1001 1 2\n", "no map"),
            (start + "own 7 1001 -1 2\n", "not a decimal"),
            (start + "own 7 1001 +1 2\n", "not a decimal"),
            (start + "own 7 1001 1e3 2\n", "not a decimal"),
            (start + "own 7 1001 18446744073709551616 2\n", "not a decimal"),
            (start + "own 7 1001 0x1 2\n", "not a decimal"),
            (start + "own 7 1001 3 3\n", "empty block range"),
            (start + "own 7 1001 9 11\n", "past the shared length"),
            (start + "own 7 1001  1 2\n", "takes 4 fields"),
            (start + "own 7 1001 1 2 \n", "takes 4 fields"),
            (start + "shared-length 7 1001 720896\n", "raised"),
            (start + "shared-length 7 1001 100\n", "not a multiple"),
            ("start 7 1001 7 100 100 1 -\n", "not a multiple"),
            ("start 7 1001 7 100 65536 4294967296 -\n", "out of range"),
            ("start 7 1001 7 100 65536 2147483648 -\n", "out of range"),
            ("start 7 1001 7 100 65536 1 abc\n", "not hex"),
            ("start 7 1001 7 100 65536 1 zz\n", "not hex"),
            ("start 7 1001 7 100 65536 1 \(String(repeating: "ab", count: 129))\n", "not hex"),
            (start + "\n", "unknown record"),
            (start + "punch 7 1001 1 2\n", "unknown record"),
            (start + "drop 7 1001\ndrop 7 1001\n", "no map"),
            (start + "own 7 1001 1 2" + String(repeating: " ", count: 600) + "\n", "longer than 512"),
        ]
        for (text, reason) in cases {
            guard let error = refusal(text) else { continue }
            XCTAssertTrue(error.reason.contains(reason), "\(text.debugDescription): \(error)")
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).count - 1
            XCTAssertEqual(error.line, lines, "\(text.debugDescription): the failing line is the last")
        }
        XCTAssertNil(BlockMapBook(decoding: Array("own 7 1 2 3\n".utf8)))
    }

    func testRecordsParseBackFromTheirLines() throws {
        for record in history {
            var line = record.line
            XCTAssertEqual(line.removeLast(), UInt8(ascii: "\n"))
            XCTAssertLessThanOrEqual(line.count, Record.maximumLineLength)
            XCTAssertEqual(try Record.parse(line: line), record)
        }
        let longest = Record.start(
            member: EntryID(device: .max, inode: .max), base: EntryID(device: .max, inode: .max),
            sharedLength: UInt64.max / block * block, handleType: .max,
            handle: Array(repeating: 0xFF, count: Record.maximumHandleBytes))
        XCTAssertLessThanOrEqual(longest.line.count - 1, Record.maximumLineLength)
        XCTAssertEqual(try Record.parse(line: longest.line.dropLast()), longest)
    }

    /// The fuzz target's seeds are valid books (the fuzzer mutates from
    /// accepted inputs, not only refused ones); the last ends torn.
    func testTheFuzzSeedsAreValidBooks() throws {
        let seeds = try FuzzCorpus.seeds(.blockMaps)
        XCTAssertEqual(seeds.count, 3)
        for seed in seeds { XCTAssertFalse(try BlockMapBook.decode(seed).durable.isEmpty) }
    }

    // MARK: The base's stamp

    let stamp = BaseStamp(size: 8_388_608, modifiedSeconds: 1_765_000_000, modifiedNanoseconds: 123_456_789)

    /// A `start` and a `base` line carry the base's stamp (seconds may be
    /// negative); `stamp` stamps anew; the snapshot keeps the latest stamp.
    func testTheBaseStampRoundTripsThroughTheJournalAndTheSnapshot() throws {
        let early = BaseStamp(size: 5, modifiedSeconds: -86_400, modifiedNanoseconds: 999_999_999)
        let records: [Record] = [
            .start(member: one, base: baseA, sharedLength: 2 * block, handleType: 1, handle: [1], stamp: stamp),
            .start(member: two, base: baseA, sharedLength: 2 * block, handleType: 1, handle: [2], stamp: early),
            .stamp(member: one, stamp: early),
            .rebase(member: two, base: baseB, stamp: stamp),
        ]
        XCTAssertEqual(String(decoding: records[0].line, as: UTF8.self), "start 7 1001 7 100 131072 1 01 8388608 1765000000 123456789\n")
        XCTAssertEqual(String(decoding: records[2].line, as: UTF8.self), "stamp 7 1001 5 -86400 999999999\n")
        XCTAssertEqual(String(decoding: records[3].line, as: UTF8.self), "base 7 1002 7 200 8388608 1765000000 123456789\n")
        for record in records { XCTAssertEqual(try Record.parse(line: record.line.dropLast()), record) }
        var book = BlockMapBook()
        try book.applyDurable(records)
        XCTAssertEqual(book.durable[one]?.map.baseStamp, early)
        XCTAssertEqual(book.durable[two]?.map.baseStamp, stamp)
        XCTAssertEqual(book.durable[two]?.map.base, baseB)
        XCTAssertEqual(try BlockMapBook.decode(book.encoded), book)
    }

    /// Lines written before stamps (a `start` of seven fields, a `base` of
    /// four) still read: their maps have no stamp.
    func testAJournalWrittenBeforeStampsStillReads() throws {
        let book = try decoded("start 7 1001 7 100 1048576 1 ab01ff\nown 7 1001 3 6\nbase 7 1001 7 200\n")
        XCTAssertEqual(book.durable[one]?.map.base, baseB)
        XCTAssertNil(book.durable[one]?.map.baseStamp)
        XCTAssertEqual(book.durable[one]?.map.own, BlockRanges([3..<6]))
    }

    func testAMalformedStampIsRefused() {
        XCTAssertEqual(refusal("start 7 1001 7 100 131072 1 01 5 6\n")?.line, 1, "a stamp of two fields")
        XCTAssertEqual(refusal("start 7 1001 7 100 131072 1 01 5 6 1000000000\n")?.line, 1, "nanoseconds out of range")
        XCTAssertEqual(refusal("start 7 1001 7 100 131072 1 01 5 +6 7\n")?.line, 1, "a sign other than minus")
        XCTAssertEqual(refusal("start 7 1001 7 100 131072 1 01 8388608 1 2\nstamp 7 1001 1 2\n")?.line, 2, "a stamp record of two fields")
        XCTAssertEqual(refusal("stamp 7 1001 1 2 3\n")?.line, 1, "a stamp of an unknown member")
    }
}
