import PurgeCore
import XCTest

@testable import PurgeFS

/// The flags file: each entry's flags with the birth time of the inode they
/// were set on, and the files written before birth times were kept.
final class StoredFlagsTests: XCTestCase {
    private let file = EntryID(device: 2049, inode: 77)

    func testFlagsStayWithTheInodeTheyWereSetOn() {
        var flags = StoredFlags()
        flags.set(.pinned, true, for: file, born: 1_000)
        XCTAssertTrue(flags.belong(to: file, born: 1_000))
        XCTAssertFalse(flags.belong(to: file, born: 2_000), "a later inode with the number")
        XCTAssertTrue(flags.belong(to: file, born: nil), "a filesystem that keeps no birth time cannot tell")
        // Setting a flag on the later inode starts from none of the earlier one's.
        flags.set(.tombstone, true, for: file, born: 2_000)
        XCTAssertEqual(flags.flags(of: file), .tombstone)
        XCTAssertTrue(flags.belong(to: file, born: 2_000))
    }

    func testTheFileRoundTripsAndReadsTheOlderFormat() throws {
        var flags = StoredFlags()
        flags.set(.pinned, true, for: file, born: 1_234_567_890_123)
        flags.set(.group, true, for: EntryID(device: 2049, inode: 5), born: nil)
        let decoded = try XCTUnwrap(StoredFlags(decoding: flags.encoded))
        XCTAssertEqual(decoded, flags)
        XCTAssertEqual(String(decoding: flags.encoded, as: UTF8.self), "2049 5 2 0\n2049 77 1 1234567890123\n")

        let older = try XCTUnwrap(StoredFlags(decoding: Array("2049 77 1\n".utf8)), "lines without a birth time")
        XCTAssertEqual(older.flags(of: file), .pinned)
        XCTAssertTrue(older.belong(to: file, born: 99), "an unknown birth time is trusted")
        XCTAssertNil(StoredFlags(decoding: Array("2049 77 1 x\n".utf8)), "a malformed birth time")
        XCTAssertNil(StoredFlags(decoding: Array("2049 77\n".utf8)), "a short line")
    }
}
