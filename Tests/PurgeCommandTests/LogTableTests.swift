import Glibc
@testable import PurgeEngines
import XCTest
@testable import PurgeCommand

final class LogTableTests: XCTestCase {
    private let line = #"{"time":1764460800.123,"path":"caches/a.bin","bytes":4096,"size":4000,"last_used":1764450000.5,"reason":"monitor","action":"delete"}"#

    override func setUp() {
        super.setUp()
        setenv("TZ", "UTC", 1)
        tzset()
    }

    override func tearDown() {
        unsetenv("TZ")
        tzset()
        super.tearDown()
    }

    func testParsesTheDaemonsLines() throws {
        let entry = try XCTUnwrap(PurgeLogEntry(line: line))
        XCTAssertEqual(entry, PurgeLogEntry(time: 1764460800.123, path: "caches/a.bin", bytes: 4096, size: 4000, lastUsed: 1764450000.5,
                                            reason: "monitor", action: "delete"))
        let escaped = try XCTUnwrap(PurgeLogEntry(line: #"{"time":1,"path":"tmp/new\nline \"q\"","bytes":0,"size":0,"last_used":0,"reason":"manual","action":"truncate","extra":[1]}"#))
        XCTAssertEqual(escaped.path, "tmp/new\nline \"q\"")
        XCTAssertEqual(escaped.action, "truncate")
        XCTAssertNil(PurgeLogEntry(line: #"{"time":1,"path":"torn"#))
        XCTAssertNil(PurgeLogEntry(line: #"{"path":"no time","bytes":1,"size":1}"#))
        XCTAssertNil(PurgeLogEntry(line: "[]"))
    }

    func testTable() {
        var table = LogTable(now: 1764460800 + 3 * 3600)
        XCTAssertNil(table.add(""))
        let first = table.add(line)
        XCTAssertEqual(first, LogTable.header + "\n"
                       + "2025-11-30 00:00:00  monitor  delete       3.9 KiB     5h ago  caches/a.bin")
        XCTAssertTrue(LogTable.header.hasPrefix("TIME                 REASON   ACTION"))
        XCTAssertNil(table.add("garbage"))
        let second = table.add(line.replacingOccurrences(of: "caches/a.bin", with: "tmp/b\\nc"))
        XCTAssertEqual(second?.hasSuffix("  tmp/b\\nc"), true, second ?? "")
        XCTAssertEqual(table.footer, "2 files purged, 8 KiB freed. (1 unreadable line skipped.)")
    }

    func testEmptyLog() {
        let table = LogTable(now: 0)
        XCTAssertEqual(table.footer, "Nothing has been purged yet.")
    }
}

private extension String {
    func replacingOccurrences(of target: String, with replacement: String) -> String {
        var result = ""
        var rest = self[...]
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound] + replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}
