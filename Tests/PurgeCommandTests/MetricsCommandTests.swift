import PurgeCore
@testable import PurgeEngines
import XCTest
@testable import PurgeCommand

/// `purgefs metrics` without a mount: parsing, the JSON shape, the table,
/// the Prometheus text and the live figures from attributes.
final class MetricsCommandTests: XCTestCase {
    let june1: Int64 = 1_748_736_000

    func testParsing() throws {
        let plain = try MetricsCommand(parsing: ["/m"])
        XCTAssertEqual(plain.output, .table)
        XCTAssertEqual(plain.days, 7)
        XCTAssertEqual(try MetricsCommand(parsing: ["/m", "--json", "--days", "30"]).output, .json)
        XCTAssertEqual(try MetricsCommand(parsing: ["/m", "--days=30"]).days, 30)
        XCTAssertEqual(try MetricsCommand(parsing: ["--prometheus", "/m"]).output, .prometheus)
        XCTAssertEqual(try MetricsCommand(parsing: ["/c", "--state", "/var/lib/s"]).stateArgument, "/var/lib/s")
        XCTAssertNil(plain.stateArgument)
        for (arguments, line) in [
            (["/m", "--json", "--prometheus"], "metrics: give --json or --prometheus, not both"),
            (["/m", "--days", "0"], "metrics: --days 0: give a whole number of days from 1 to 3660"),
            (["/m", "--days", "x"], "metrics: --days x: give a whole number of days from 1 to 3660"),
            (["/m", "--days"], "metrics: --days needs a N"),
            ([], "metrics: MOUNTPOINT is missing (see purgefs metrics --help)"),
        ] {
            XCTAssertThrowsError(try MetricsCommand(parsing: arguments)) { XCTAssertEqual($0 as? CommandExit, .usage(line)) }
        }
    }

    func day() -> MetricsDay {
        var first = MetricsSample(start: june1 + 100, time: june1 + 3700)
        first.binaryFileSize = 10; first.dataFileSize = 20; first.cacheFolderSize = 30; first.purgedBytes = 5
        var second = first
        second.start = first.time
        second.time = june1 + 7300
        second.dataFileSize = 25
        second.purgedBytes = 6
        return MetricsDay(start: june1, entries: [first, second])
    }

    func testJSONHasMetricKitsShape() throws {
        let document = MetricsJSON.document(container: "/c", mountpoint: nil, days: 7, reports: [day()], now: june1 + 90000)
        let parsed = try XCTUnwrap(JSONValue(parsing: document.pretty))
        XCTAssertEqual(parsed, document)
        XCTAssertEqual(parsed["container"], .string("/c"))
        XCTAssertEqual(parsed["mountpoint"], .null)
        guard case .array(let reports)? = parsed["reports"], let report = reports.first else { return XCTFail("\(parsed)") }
        XCTAssertEqual(report["timeRange"]?["start"], .string("2025-06-01T00:00:00Z"))
        XCTAssertEqual(report["timeRange"]?["end"], .string("2025-06-02T00:00:00Z"))
        XCTAssertEqual(report["complete"], .bool(true))
        XCTAssertEqual(report["stateEntries"], .array([]))
        guard case .array(let entries)? = report["intervalEntries"] else { return XCTFail("\(report)") }
        XCTAssertEqual(entries.count, 3, "the full-day entry and two intervals")
        XCTAssertEqual(entries[0]["fullDay"], .bool(true))
        XCTAssertEqual(entries[0]["duration"]?.integerValue, 86400)
        XCTAssertEqual(entries[1]["duration"]?.integerValue, 3600)
        XCTAssertEqual(entries[1]["end"], .string("2025-06-01T01:01:40Z"))
        func metric(_ entry: JSONValue, _ name: String) -> JSONValue? {
            guard case .array(let values)? = entry["values"] else { return nil }
            return values.compactMap { $0[name] }.first
        }
        XCTAssertEqual(metric(entries[0], "totalFileSize")?["dataFileSize"]?.integerValue, 25, "the day's last figures")
        XCTAssertEqual(metric(entries[0], "purgefsStorage")?["purgedSize"]?.integerValue, 11, "the day's purges")
        XCTAssertEqual(metric(entries[1], "totalFileSize")?["dataFileSize"]?.integerValue, 20)
        for entry in entries {
            for name in ["start", "end", "duration", "fullDay", "resolution", "sampleCount", "values", "states"] {
                XCTAssertNotNil(entry[name], name)
            }
            XCTAssertEqual(Set(["binaryFileSize", "dataFileSize", "cacheFolderSize", "cloneSize"]),
                           Set(Self.keys(metric(entry, "totalFileSize"))))
            XCTAssertEqual(Set(["binaryFileCount", "dataFileCount"]), Set(Self.keys(metric(entry, "totalFileCount"))))
            XCTAssertEqual(Set(["cacheFileCount", "logicalSize", "purgeableSize", "purgedSize", "purgedFileCount", "capacity", "available"]),
                           Set(Self.keys(metric(entry, "purgefsStorage"))))
        }
    }

    static func keys(_ value: JSONValue?) -> [String] {
        guard case .object(let fields)? = value else { return [] }
        return fields.map(\.0)
    }

    func testTable() {
        let text = MetricsTable.text(container: "/c", days: [day()], lastDays: 7, now: june1 + 9000)
        XCTAssertTrue(text.contains("2025-06-01, so far: 65 B in 0 files, 11 B purged  ▁█"), text)
        XCTAssertTrue(text.contains("  time      binary  data  caches  clone  files  purgeable  purged  available"), text)
        XCTAssertTrue(text.contains("  01:01:40    10 B  20 B    30 B    0 B      0        0 B     5 B        0 B"), text)
        XCTAssertEqual(MetricsTable.text(container: "/c", days: [], lastDays: 1, now: 0), "No metrics samples for /c in the last 1 day.")
    }

    func testSparkline() {
        XCTAssertEqual(MetricsTable.sparkline([]), "")
        XCTAssertEqual(MetricsTable.sparkline([5, 5, 5]), "▁▁▁")
        XCTAssertEqual(MetricsTable.sparkline([0, 7, 14]), "▁▅█")
        XCTAssertEqual(MetricsTable.sparkline(Array(0..<100), width: 4), "▁▃▆█")
    }

    func testPrometheusText() {
        var sample = MetricsSample(start: 0, time: 1_700_000_000)
        sample.binaryFileSize = 1; sample.dataFileSize = 2; sample.cacheFolderSize = 3; sample.purgedBytesTotal = 9
        let text = PrometheusText.text(sample, container: "/srv/a \"b\"\\c\nd")
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        XCTAssertEqual(lines.count, PrometheusText.metrics.count * 3)
        XCTAssertTrue(lines.contains("purgefs_total_file_size_bytes{container=\"/srv/a \\\"b\\\"\\\\c\\nd\"} 6"), text)
        XCTAssertTrue(lines.contains("# TYPE purgefs_purged_bytes_total counter"))
        XCTAssertTrue(lines.contains("purgefs_sample_timestamp_seconds{container=\"/srv/a \\\"b\\\"\\\\c\\nd\"} 1700000000"))
        XCTAssertEqual(Set(PrometheusText.metrics.map(\.name)).count, PrometheusText.metrics.count)
        for metric in PrometheusText.metrics where metric.type == "counter" { XCTAssertTrue(metric.name.hasSuffix("_total")) }
    }

    func testLiveSampleFromAttributes() throws {
        let fake = FakeAttributes([
            "/m": FakeAttributes.root(size: 1000, files: 10, purgeable: 100, capacity: 5000, external: 0, available: 3000),
            "/m/App": FakeAttributes.directory(size: 300, files: 3),
            "/m/caches": FakeAttributes.directory(size: 100, files: 2, purgeable: 100),
            "/m/tmp/x": ["size": "5", "allocated": "8"],
        ])
        let scope = MetricsScope(bundle: "App", zones: ["caches", "Library/Caches"])
        let sample = try MetricsCommand.liveSample(mountpoint: "/m", scope: scope, fake.access, now: 42, isReal: { _ in true })
        XCTAssertEqual(sample.binaryFileSize, 300)
        XCTAssertEqual(sample.cacheFolderSize, 100)
        XCTAssertEqual(sample.dataFileSize, 600)
        XCTAssertEqual(sample.dataFileCount, 5)
        XCTAssertEqual(sample.purgedBytesTotal, 7)
        XCTAssertEqual(sample.capacity, 5000)
        XCTAssertEqual(sample.available, 3000)
        XCTAssertEqual(sample.time, 42)
        let fileBundle = try MetricsCommand.liveSample(mountpoint: "/m", scope: MetricsScope(bundle: "tmp/x", zones: []),
                                                       fake.access, now: 42, isReal: { _ in true })
        XCTAssertEqual(fileBundle.binaryFileSize, 8)
        XCTAssertEqual(fileBundle.binaryFileCount, 1)
        let throughSymlink = try MetricsCommand.liveSample(mountpoint: "/m", scope: scope, fake.access, now: 42, isReal: { $0 != "/m/App" })
        XCTAssertEqual(throughSymlink.binaryFileSize, 0, "a bundle reached through a symlink is not counted")
    }
}
