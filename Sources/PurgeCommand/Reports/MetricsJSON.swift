import PurgeCore

/// `purgefs metrics --json`: the history as daily reports in the shape of
/// MetricKit's `MetricReport` (field names in docs/REFERENCE.md and in
/// `purgefs metrics --help`).
///
/// ```
/// { "container": PATH, "mountpoint": PATH|null, "days": N,
///   "reports": [ { "timeRange": {"start", "end"}, "complete": BOOL,
///                  "intervalEntries": [ FULL-DAY ENTRY, INTERVAL ENTRY... ],
///                  "stateEntries": [] } ] }
/// ```
///
/// As in MetricKit, `intervalEntries` holds the full-day entry (the one with
/// the longest `duration`, first here, with `"fullDay": true`) and the
/// shorter interval entries; each has `values`, a list of metric results, one
/// single-key object per metric (`totalFileSize`, `totalFileCount`, and
/// purgefs's own `purgefsStorage`). Sizes are integers in bytes (MetricKit
/// has `Measurement<UnitInformationStorage>`), times ISO 8601 in UTC,
/// durations in seconds.
enum MetricsJSON {
    static func document(container: String, mountpoint: String?, days: Int, reports: [MetricsDay], now: Int64) -> JSONValue {
        .object([
            ("container", .string(container)),
            ("mountpoint", mountpoint.map(JSONValue.string) ?? .null),
            ("days", .integer(days)),
            ("reports", .array(reports.map { report($0, now: now) })),
        ])
    }

    static func report(_ day: MetricsDay, now: Int64) -> JSONValue {
        .object([
            ("timeRange", .object([("start", .string(UTCCalendar.iso8601(day.start))), ("end", .string(UTCCalendar.iso8601(day.end)))])),
            ("complete", .bool(day.isComplete(now: now))),
            ("intervalEntries", .array([entry(day.fullDay, fullDay: true)] + day.entries.map { entry($0, fullDay: false) })),
            ("stateEntries", .array([])),
        ])
    }

    static let resolutionNames: [MetricsResolution: String] = [.sample: "sample", .hour: "hour", .day: "day"]

    static func entry(_ sample: MetricsSample, fullDay: Bool) -> JSONValue {
        .object([
            ("start", .string(UTCCalendar.iso8601(sample.start))),
            ("end", .string(UTCCalendar.iso8601(sample.time))),
            ("duration", .number(String(sample.duration))),
            ("fullDay", .bool(fullDay)),
            ("resolution", .string(fullDay ? "day" : resolutionNames[sample.resolution] ?? "sample")),
            ("sampleCount", .integer(sample.sampleCount)),
            ("values", .array(values(sample))),
            ("states", .array([])),
        ])
    }

    static func values(_ sample: MetricsSample) -> [JSONValue] {
        [
            .object([("totalFileSize", .object([
                ("binaryFileSize", .integer(sample.binaryFileSize)),
                ("dataFileSize", .integer(sample.dataFileSize)),
                ("cacheFolderSize", .integer(sample.cacheFolderSize)),
                ("cloneSize", .integer(sample.cloneSize)),
            ]))]),
            .object([("totalFileCount", .object([
                ("binaryFileCount", .integer(sample.binaryFileCount)),
                ("dataFileCount", .integer(sample.dataFileCount)),
            ]))]),
            .object([("purgefsStorage", .object([
                ("cacheFileCount", .integer(sample.cacheFileCount)),
                ("logicalSize", .integer(sample.logicalSize)),
                ("purgeableSize", .integer(sample.purgeable)),
                ("purgedSize", .integer(sample.purgedBytes)),
                ("purgedFileCount", .integer(sample.purgedFiles)),
                ("capacity", .integer(sample.capacity)),
                ("available", .integer(sample.available)),
            ]))]),
        ]
    }
}
