import Foundation
import Glibc
import PurgeSys
import XCTest

/// The metrics history on real mounts sampling every second: samples
/// appear and equal an independent walk of the backing container, the
/// history survives remounts and `kill -9`, `purgefs metrics` reads it
/// (JSON, table, Prometheus) mounted and unmounted, and a corrupt store is
/// set aside without stopping the mount. No timings: every wait polls
/// against a deadline.
final class MetricsHistoryTests: PurgefsCommandTestCase {
    override var mountsInSetUp: Bool { false }
    override var mountOptions: [String] { ["capacity=64M", "bundle=App.app", "metrics_interval=1s"] }

    static let appFiles: [(path: String, size: Int)] = [("App.app/App", 30_000), ("App.app/Frameworks/Kit", 9000)]
    static let zones = ["Library/Caches", "caches", "tmp"]

    override func prepareContainer() throws {
        try super.prepareContainer()
        for (path, size) in Self.appFiles {
            let full = fixture.container + "/" + path
            try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            XCTAssertTrue(FileManager.default.createFile(atPath: full, contents: Data(repeating: 0x62, count: size)))
        }
    }

    var store: String { fixture.container + "/.purgefs/metrics.db" }

    // MARK: Reading the history

    /// The interval entries of every report (not the full-day ones), oldest first.
    func intervalEntries(_ path: String, file: StaticString = #filePath, line: UInt = #line) throws -> [[String: Any]] {
        let document = try object(try succeed("metrics", path, "--json", "--days", "2", file: file, line: line), file: file, line: line)
        let reports = try XCTUnwrap(document["reports"] as? [[String: Any]], file: file, line: line)
        return try reports.flatMap { report in
            try XCTUnwrap(report["intervalEntries"] as? [[String: Any]], file: file, line: line).filter { $0["fullDay"] as? Bool == false }
        }
    }

    /// Polls until the history holds at least `count` interval entries.
    @discardableResult
    func waitForEntries(_ path: String, atLeast count: Int, deadline seconds: TimeInterval = 30,
                        file: StaticString = #filePath, line: UInt = #line) throws -> [[String: Any]] {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let entries = try intervalEntries(path, file: file, line: line)
            if entries.count >= count { return entries }
            guard Date() < deadline else {
                XCTFail("\(entries.count) samples after \(Int(seconds)) s, waited for \(count)", file: file, line: line)
                return entries
            }
            usleep(100_000)
        }
    }

    /// One metric's fields in an entry's `values`.
    func metric(_ name: String, of entry: [String: Any]) -> [String: Any]? {
        (entry["values"] as? [[String: Any]])?.compactMap { $0[name] as? [String: Any] }.first
    }

    func number(_ name: String, in metric: [String: Any]?, file: StaticString = #filePath, line: UInt = #line) -> UInt64 {
        guard let value = metric?[name] as? NSNumber else {
            XCTFail("no \(name) in \(String(describing: metric))", file: file, line: line)
            return 0
        }
        return value.uint64Value
    }

    /// What a walk of the backing container says the latest sample must hold.
    struct Expected: Equatable {
        var binary: UInt64, binaryFiles: UInt64, data: UInt64, dataFiles: UInt64, caches: UInt64, cacheFiles: UInt64, logical: UInt64
    }

    func walked() -> Expected {
        let walk = BackingWalk(fixture.container)
        let root = walk.totals(of: "", zones: Self.zones)
        let app = walk.totals(of: "App.app", zones: Self.zones)
        let caches = Self.zones.map { walk.totals(of: $0, zones: Self.zones) }
        let cacheBytes = caches.reduce(0) { $0 + $1.allocated }, cacheFiles = caches.reduce(0) { $0 + $1.files }
        return Expected(binary: app.allocated, binaryFiles: app.files, data: root.allocated - app.allocated - cacheBytes,
                        dataFiles: root.files - app.files - cacheFiles, caches: cacheBytes, cacheFiles: cacheFiles, logical: root.size)
    }

    func sampled(_ entry: [String: Any]) -> Expected {
        let size = metric("totalFileSize", of: entry), count = metric("totalFileCount", of: entry)
        let storage = metric("purgefsStorage", of: entry)
        return Expected(binary: number("binaryFileSize", in: size), binaryFiles: number("binaryFileCount", in: count),
                        data: number("dataFileSize", in: size), dataFiles: number("dataFileCount", in: count),
                        caches: number("cacheFolderSize", in: size), cacheFiles: number("cacheFileCount", in: storage),
                        logical: number("logicalSize", in: storage))
    }

    // MARK: Tests

    func testSamplesAppearAndEqualAWalk() throws {
        try fixture.mount(options: mountOptions)
        let entries = try waitForEntries(mnt, atLeast: 3)
        let expected = walked()
        XCTAssertEqual(sampled(try XCTUnwrap(entries.last)), expected)
        XCTAssertGreaterThan(expected.binary, 0)
        XCTAssertGreaterThan(expected.caches, 0)
        let storage = metric("purgefsStorage", of: try XCTUnwrap(entries.last))
        XCTAssertEqual(number("capacity", in: storage), 64 << 20)
        XCTAssertEqual(number("purgeableSize", in: storage), try attribute("purgeable", of: mnt))
        XCTAssertEqual(number("cloneSize", in: metric("totalFileSize", of: entries.last!)), 0, "no clones yet")

        // A file written through the mount shows in a later sample; a purge shows as purged bytes.
        XCTAssertTrue(FileManager.default.createFile(atPath: mnt + "/Documents/new.bin", contents: Data(repeating: 1, count: 50_000)))
        let purgeable = try attribute("purgeable", of: mnt)
        try succeed("purge", mnt, "--all")
        let deadline = Date().addingTimeInterval(30)
        var latest: [String: Any] = [:]
        var purged: UInt64 = 0
        repeat {
            let all = try intervalEntries(mnt)
            latest = all.last ?? [:]
            purged = all.reduce(0) { $0 + number("purgedSize", in: metric("purgefsStorage", of: $1)) }
            if sampled(latest) == walked() && purged == purgeable { break }
            usleep(100_000)
        } while Date() < deadline
        XCTAssertEqual(sampled(latest), walked(), "the latest sample equals a walk after a write and a purge")
        XCTAssertEqual(purged, purgeable, "the purged bytes of the samples add up to what was purged")
        XCTAssertEqual(walked().caches, 0)
    }

    func testJSONFieldsAndTable() throws {
        try fixture.mount(options: mountOptions)
        try waitForEntries(mnt, atLeast: 2)
        let document = try object(try succeed("metrics", mnt, "--json"))
        XCTAssertEqual(document["container"] as? String, fixture.container)
        XCTAssertEqual(document["mountpoint"] as? String, mnt)
        XCTAssertEqual(document["days"] as? Int, 7)
        let reports = try XCTUnwrap(document["reports"] as? [[String: Any]])
        XCTAssertFalse(reports.isEmpty)
        for report in reports {
            XCTAssertEqual(Set(report.keys), ["timeRange", "complete", "intervalEntries", "stateEntries"])
            let range = try XCTUnwrap(report["timeRange"] as? [String: String])
            XCTAssertTrue(try XCTUnwrap(range["start"]).hasSuffix("T00:00:00Z"), "\(range)")
            let entries = try XCTUnwrap(report["intervalEntries"] as? [[String: Any]])
            XCTAssertEqual(entries.first?["fullDay"] as? Bool, true, "the full-day entry comes first")
            XCTAssertEqual(entries.first?["duration"] as? Int, 86400)
            XCTAssertEqual(entries.filter { $0["fullDay"] as? Bool == true }.count, 1)
            for entry in entries {
                XCTAssertEqual(Set(entry.keys), ["start", "end", "duration", "fullDay", "resolution", "sampleCount", "values", "states"])
                XCTAssertEqual(Set(try XCTUnwrap(metric("totalFileSize", of: entry)).keys),
                               ["binaryFileSize", "dataFileSize", "cacheFolderSize", "cloneSize"])
                XCTAssertEqual(Set(try XCTUnwrap(metric("totalFileCount", of: entry)).keys), ["binaryFileCount", "dataFileCount"])
                XCTAssertEqual(Set(try XCTUnwrap(metric("purgefsStorage", of: entry)).keys),
                               ["cacheFileCount", "logicalSize", "purgeableSize", "purgedSize", "purgedFileCount", "capacity", "available"])
            }
        }
        let table = try succeed("metrics", mnt)
        XCTAssertTrue(table.hasPrefix("Metrics of \(fixture.container) (times in UTC"), table)
        XCTAssertTrue(table.contains("  time ") && table.contains("binary") && table.contains("purgeable"), table)
        XCTAssertTrue(table.unicodeScalars.contains { (0x2581...0x2588).contains($0.value) }, "a sparkline: \(table)")
    }

    func testHistorySurvivesRemountAndKill9() throws {
        try fixture.mount(options: mountOptions)
        try waitForEntries(mnt, atLeast: 2)
        XCTAssertEqual(fixture.unmount(), [])
        let afterUnmount = try intervalEntries(fixture.container)
        XCTAssertGreaterThanOrEqual(afterUnmount.count, 3, "mount, interval and unmount samples")

        // In place this time: the history is read through the daemon.
        try fixture.mount(options: mountOptions, inPlace: true)
        XCTAssertFalse(exists(store), "the mount covers its state directory")
        let beforeKill = try waitForEntries(fixture.container, atLeast: afterUnmount.count + 2)
        guard let pid = fixture.daemonPID else { return XCTFail("no daemon") }
        XCTAssertEqual(kill(pid, SIGKILL), 0)
        for problem in fixture.unmount() { XCTFail(problem) }

        let afterKill = try intervalEntries(fixture.container)
        XCTAssertGreaterThanOrEqual(afterKill.count, beforeKill.count, "a killed daemon loses no stored sample")
        let ends = afterKill.compactMap { $0["end"] as? String }
        XCTAssertEqual(ends, ends.sorted())
        XCTAssertEqual(Array(afterKill.prefix(afterUnmount.count).compactMap { $0["end"] as? String }),
                       afterUnmount.compactMap { $0["end"] as? String }, "the earlier history is kept")

        try fixture.mount(options: mountOptions)
        try waitForEntries(mnt, atLeast: afterKill.count + 1)
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: fixture.container + "/.purgefs")) ?? []
        XCTAssertFalse(entries.contains { $0.contains("corrupt") }, "\(entries)")
        XCTAssertFalse(fixture.daemonStderrText().contains("metrics"), fixture.daemonStderrText())
    }

    /// `--deliver`: a sample at once (the interval here is an hour), then
    /// the request number PurgeKit's managers watch, raised by one each time.
    func testDeliverTakesASampleNowAndRaisesTheRequest() throws {
        try fixture.mount(options: ["capacity=64M", "bundle=App.app", "metrics_interval=1h"])
        let before = try intervalEntries(mnt).count
        try Data(repeating: 1, count: 70_000).write(to: URL(fileURLWithPath: mnt + "/Documents/new.bin"))
        XCTAssertTrue(try succeed("metrics", "--deliver", mnt).contains("request 1"))
        let entries = try intervalEntries(mnt)
        XCTAssertEqual(entries.count, before + 1, "one sample, taken on request")
        XCTAssertEqual(try XCTUnwrap(entries.last.map(sampled)), walked(), "the sample holds the file written just before")
        let request = fixture.container + "/.purgefs/metrics-deliver"
        XCTAssertEqual(try String(contentsOfFile: request, encoding: .utf8), "1\n")
        try succeed("metrics", "--deliver", mnt)
        XCTAssertEqual(try String(contentsOfFile: request, encoding: .utf8), "2\n")

        try assertRejected(["metrics", "--deliver", "--json", mnt], status: 64, mentioning: ["--deliver"])
        XCTAssertEqual(fixture.unmount(), [])
        try assertRejected(["metrics", "--deliver", fixture.container], status: 1, mentioning: ["not a purgefs mount"])
    }

    func testPrometheusTextParses() throws {
        try fixture.mount(options: mountOptions)
        try waitForEntries(mnt, atLeast: 1)
        let live = try succeed("metrics", mnt, "--prometheus")
        let (samples, problems) = PrometheusGrammar.parse(live)
        XCTAssertEqual(problems, [], live)
        func value(_ name: String, _ samples: [PrometheusGrammar.Sample]) -> Double? {
            samples.first { $0.name == name }.map(\.value)
        }
        XCTAssertTrue(samples.allSatisfy { $0.labels == ["container": fixture.container] })
        XCTAssertEqual(value("purgefs_total_file_size_bytes", samples), Double(try attribute("allocated", of: mnt)))
        XCTAssertEqual(value("purgefs_logical_size_bytes", samples), Double(try attribute("size", of: mnt)))
        XCTAssertEqual(value("purgefs_binary_file_size_bytes", samples), Double(try attribute("allocated", of: mnt + "/App.app")))
        XCTAssertEqual(value("purgefs_capacity_bytes", samples), Double(64 << 20))
        XCTAssertEqual(value("purgefs_total_file_count", samples), Double(try attribute("files", of: mnt)))
        for name in ["purgefs_purged_bytes_total", "purgefs_data_file_size_bytes", "purgefs_cache_folder_size_bytes",
                     "purgefs_clone_size_bytes", "purgefs_available_bytes", "purgefs_purgeable_bytes"] {
            XCTAssertNotNil(value(name, samples), name)
        }

        XCTAssertEqual(fixture.unmount(), [])
        let stored = try succeed("metrics", fixture.container, "--prometheus")
        let (storedSamples, storedProblems) = PrometheusGrammar.parse(stored)
        XCTAssertEqual(storedProblems, [], stored)
        XCTAssertEqual(value("purgefs_enospc_total", samples), 0, "a live mount's own counter")
        XCTAssertEqual(storedSamples.map(\.name), samples.map(\.name).filter { $0 != "purgefs_enospc_total" },
                       "the history has everything but what only a live mount counts")
        XCTAssertEqual(value("purgefs_total_file_size_bytes", storedSamples), value("purgefs_total_file_size_bytes", samples),
                       "the unmount's sample holds the same figures")
    }

    func testUnmountedContainerAndMissingStore() throws {
        try assertRejected(["metrics", fixture.container], status: 1, mentioning: ["neither a purgefs mount nor a container"])
        XCTAssertEqual(mkdir(fixture.container + "/.purgefs", 0o700), 0)
        try assertRejected(["metrics", fixture.container, "--json"], status: 1, mentioning: ["no metrics history"])
        XCTAssertFalse(exists(store), "reading never creates the store")
        try assertRejected(["metrics", fixture.container, "--days", "0"], status: 64, mentioning: ["--days 0"])
        try assertRejected(["metrics", fixture.native], status: 1, mentioning: ["neither a purgefs mount nor a container"])

        try fixture.mount(options: mountOptions)
        try waitForEntries(mnt, atLeast: 1)
        try assertRejected(["metrics", mnt + "/caches"], status: 1, mentioning: ["give the mount point"])
        XCTAssertEqual(fixture.unmount(), [])
        let table = try succeed("metrics", fixture.container, "--days", "1")
        XCTAssertTrue(table.contains(UTCDay.today), table)
        XCTAssertFalse(try intervalEntries(fixture.container).isEmpty)
    }

    func testCorruptStoreIsSetAsideAndTheMountGoesOn() throws {
        try fixture.mount(options: mountOptions)
        try waitForEntries(mnt, atLeast: 1)
        XCTAssertEqual(fixture.unmount(), [])
        for suffix in ["-wal", "-shm"] { unlink(store + suffix) }
        XCTAssertTrue(FileManager.default.createFile(atPath: store, contents: Data(String(repeating: "not sqlite ", count: 1000).utf8)))
        try assertRejected(["metrics", fixture.container], status: 1, mentioning: ["unreadable"])

        try fixture.mount(options: mountOptions)
        XCTAssertTrue(FileManager.default.createFile(atPath: mnt + "/Documents/after.txt", contents: Data("still works".utf8)))
        XCTAssertEqual(try String(contentsOfFile: mnt + "/Documents/after.txt", encoding: .utf8), "still works")
        try waitForEntries(mnt, atLeast: 2)
        let state = try FileManager.default.contentsOfDirectory(atPath: fixture.container + "/.purgefs")
        let aside = state.filter { $0.hasPrefix("metrics.db.corrupt-") && !$0.hasSuffix("-wal") }
        XCTAssertEqual(aside.count, 1, "\(state)")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: fixture.container + "/.purgefs/" + aside[0])).count, 11_000,
                       "the old store is kept as it was")
        let log = try String(contentsOfFile: fixture.container + "/.purgefs/daemon.log", encoding: .utf8)
        XCTAssertTrue(log.contains("metrics history was unreadable") && log.contains(aside[0]), log)
    }
}

/// Today's UTC date, as the table heads it.
enum UTCDay {
    static var today: String {
        let formatter = DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd"
        return formatter.string(from: Date())
    }
}

/// The grammar check itself refuses what it must.
final class PrometheusGrammarTests: XCTestCase {
    func testRefusesMalformedText() {
        let good = "# HELP a_b A.\n# TYPE a_b gauge\na_b{x=\"1\\\"\"} 3\n"
        XCTAssertEqual(PrometheusGrammar.parse(good).problems, [])
        for bad in [
            "# TYPE a gauge\na 1",                                  // no final newline
            "a 1\n",                                                // no TYPE
            "# TYPE 1a gauge\n1a 1\n",                              // bad name
            "# TYPE a gauge\na{x=\"1\"} 1 123\n",                   // a timestamp
            "# TYPE a gauge\na{x=\"\\t\"} 1\n",                     // bad escape
            "# TYPE a gauge\na 1\na 2\n",                           // a series twice
            "# TYPE a gauge\na 1\n# HELP a late\n",                 // HELP after samples
            "# TYPE a counter\na 1\n",                              // counter without _total
            "# TYPE a gauge\n# TYPE b gauge\na 1\nb 1\na{x=\"y\"} 1\n",  // not together
            "# TYPE a gauge\na{0x=\"1\"} 1\n",                      // bad label name
            "# TYPE a gauge\na one\n",                              // not a number
            "# TYPE a gauge\n\na 1\n",                              // empty line
        ] {
            XCTAssertFalse(PrometheusGrammar.parse(bad).problems.isEmpty, bad)
        }
    }
}
