import PurgeCore
import XCTest

final class RuntimeRecordTests: XCTestCase {
    func testRoundTrip() {
        let record = RuntimeRecord(processID: 4242, stateDescriptor: 7, container: "/srv/my app")
        XCTAssertEqual(RuntimeRecord(decoding: record.encoded), record)
        let full = RuntimeRecord(processID: 1, stateDescriptor: 3, container: "/c", zones: ["Library/Caches", "tmp"],
                                 bundle: "App.app")
        XCTAssertEqual(RuntimeRecord(decoding: full.encoded), full)
        XCTAssertEqual(record.stateDirectoryPath, "/proc/4242/fd/7")
    }

    /// The marks travel exactly (bytes not rounded as `displayText` rounds them).
    func testMarksRoundTripExactly() {
        let record = RuntimeRecord(processID: 1, stateDescriptor: 3, container: "/c", low: .bytes(100_000_001), high: .percent(12.5))
        XCTAssertEqual(RuntimeRecord(decoding: record.encoded), record)
        XCTAssertNil(RuntimeRecord(decoding: Array("pid 1\nstate 3\ncontainer /c\n".utf8))?.low, "an older record has none")
    }

    func testMalformedRecordsAreRefused() {
        XCTAssertNil(RuntimeRecord(decoding: Array("pid x\nstate 3\ncontainer /c\n".utf8)))
        XCTAssertNil(RuntimeRecord(decoding: Array("pid 1\ncontainer /c\n".utf8)))
        XCTAssertNil(RuntimeRecord(decoding: Array("garbage".utf8)))
    }

    func testDirectoryByUser() {
        XCTAssertEqual(RuntimeRecord.directory(user: 0, runtimeDirectory: "/run/user/0"), "/run/purgefs")
        XCTAssertEqual(RuntimeRecord.directory(user: 1000, runtimeDirectory: "/run/user/1000"), "/run/user/1000/purgefs")
        XCTAssertEqual(RuntimeRecord.directory(user: 1000, runtimeDirectory: nil), "/tmp/purgefs-1000")
        XCTAssertEqual(RuntimeRecord.fileName(mountID: 31), "mount-31")
    }
}
