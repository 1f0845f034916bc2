import Glibc
import PurgeCore
import PurgeStore
import XCTest

/// The SQLite history against temporary files, on a fake clock.
final class MetricsStoreTests: XCTestCase {
    var directory = ""
    var path: String { directory + "/metrics.db" }
    let june1: Int64 = 1_748_736_000

    override func setUpWithError() throws {
        var template = Array("/tmp/purgestore-test.XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else { throw XCTSkip("mkdtemp failed") }
        directory = String(cString: template)
    }

    override func tearDown() {
        _ = system("rm -rf '\(directory)'")
    }

    func sample(_ time: Int64, size: UInt64 = 7) -> MetricsSample {
        var sample = MetricsSample(start: time - 60, time: time)
        sample.dataFileSize = size
        sample.capacity = UInt64.max - 1
        sample.purgedBytes = 1
        return sample
    }

    func testSamplesRoundTripAndSurviveReopening() throws {
        do {
            let store = try MetricsStore(path: path, mode: .readWrite)
            XCTAssertNil(try store.latest())
            var full = sample(june1)
            full.binaryFileSize = 1; full.cacheFolderSize = 2; full.cloneSize = 3; full.binaryFileCount = 4
            full.dataFileCount = 5; full.cacheFileCount = 6; full.logicalSize = 8; full.purgeable = 9
            full.purgedFiles = 10; full.purgedBytesTotal = 11; full.purgedFilesTotal = 12; full.available = 13
            full.sampleCount = 14; full.resolution = .hour
            try store.insert(full)
            try store.insert(sample(june1 + 60))
            XCTAssertEqual(try store.samples(in: june1..<(june1 + 1)), [full])
            XCTAssertEqual(try store.latest()?.time, june1 + 60)
        }
        let reader = try MetricsStore(path: path, mode: .readOnly)
        XCTAssertEqual(try reader.count(), 2)
        XCTAssertEqual(try reader.samples(in: 0..<Int64.max).map(\.time), [june1, june1 + 60])
        XCTAssertEqual(try reader.latest()?.capacity, UInt64.max - 1, "unsigned values keep their bits")
    }

    func testReadOnlyNeverCreates() {
        XCTAssertThrowsError(try MetricsStore(path: path, mode: .readOnly)) { error in
            XCTAssertEqual(error as? MetricsStoreError, .missing(path))
        }
        XCTAssertNotEqual(access(path, F_OK), 0)
    }

    func testJunkIsUnreadable() throws {
        let junk = String(repeating: "this is not a database\n", count: 400)
        XCTAssertTrue(FileManagerless.write(junk, to: path))
        for mode in [MetricsStore.Mode.readWrite, .readOnly] {
            XCTAssertThrowsError(try MetricsStore(path: path, mode: mode)) { error in
                guard let error = error as? MetricsStoreError else { return XCTFail("\(error)") }
                XCTAssertTrue(error.shouldSetAside, "\(error)")
                XCTAssertTrue(error.description.contains("unreadable"), error.description)
            }
        }
    }

    func testNewerSchemaIsRefused() throws {
        do {
            _ = try MetricsStore(path: path, mode: .readWrite)
        }
        XCTAssertEqual(system("sqlite3 '\(path)' 'PRAGMA user_version = 9' >/dev/null"), 0)
        XCTAssertThrowsError(try MetricsStore(path: path, mode: .readWrite)) { error in
            XCTAssertEqual(error as? MetricsStoreError, .newerSchema(path, 9))
        }
    }

    func testWALAndNormalSync() throws {
        let store = try MetricsStore(path: path, mode: .readWrite)
        try store.insert(sample(june1))
        var output = [CChar](repeating: 0, count: 64)
        let pipe = popen("sqlite3 '\(path)' 'PRAGMA journal_mode'", "r")
        defer { pclose(pipe) }
        XCTAssertNotNil(fgets(&output, 64, pipe))
        XCTAssertEqual(String(cString: output), "wal\n")
    }

    func testCompactionBoundsTheHistory() throws {
        let store = try MetricsStore(path: path, mode: .readWrite)
        let retention = MetricsRetention(samplesFor: 86400, hoursFor: 3 * 86400, daysFor: 10 * 86400)
        // Twenty days of a sample every five minutes (5,760 rows), compacted every six hours.
        var now = june1
        for step in 0..<(20 * 288) {
            now = june1 + Int64(step) * 300
            try store.insert(sample(now, size: UInt64(step)))
            if step % 72 == 71 { try store.compact(now: now, retention: retention) }
        }
        try store.compact(now: now, retention: retention)
        let rows = try store.samples(in: 0..<Int64.max)
        XCTAssertEqual(try store.count(), rows.count)
        XCTAssertLessThanOrEqual(rows.count, 288 + 12 + 4 * 24 + 11, "bounded")
        XCTAssertEqual(rows.filter { $0.resolution == .day }.count, 7, "days 9 to 15: older than three days, not older than ten")
        XCTAssertEqual(rows.last?.dataFileSize, UInt64(20 * 288 - 1))
        XCTAssertEqual(rows.first { $0.resolution == .day }?.sampleCount, 288)
        XCTAssertEqual(rows.reduce(0) { $0 + $1.purgedBytes }, rows.reduce(0) { $0 + $1.sampleCount }, "folding loses no purge")
        XCTAssertEqual(try store.compact(now: now, retention: retention).removed, 0, "nothing left to do")
    }
}

/// Writes a file without Foundation.
enum FileManagerless {
    static func write(_ text: String, to path: String) -> Bool {
        guard let file = fopen(path, "w") else { return false }
        defer { fclose(file) }
        return fputs(text, file) >= 0
    }
}
