/// How long the metrics history keeps its detail, so it stays bounded
/// whatever the sampling interval.
///
/// Time is cut into UTC hours and UTC days (whole multiples of 3600 and
/// 86400 seconds since the epoch: UTC has no daylight saving, and leap
/// seconds do not exist in epoch time). A row belongs to the bucket that
/// holds its `time`. Once a whole bucket is older than the limit, its rows
/// are folded into one (`MetricsSample.folded`):
///
/// - samples as taken are kept for `samplesFor` (2 days), then folded into
///   one row per hour;
/// - hourly rows are kept for `hoursFor` (400 days), then folded into one
///   row per day;
/// - daily rows are dropped after `daysFor` (10 years).
///
/// So the history holds at most two days of samples at the mount's interval,
/// 9,600 hourly rows and 3,660 daily ones.
public struct MetricsRetention: Equatable, Sendable {
    public var samplesFor: Int64 = 2 * 86400
    public var hoursFor: Int64 = 400 * 86400
    public var daysFor: Int64 = 3660 * 86400

    public init() {}

    public init(samplesFor: Int64, hoursFor: Int64, daysFor: Int64) {
        self.samplesFor = samplesFor
        self.hoursFor = hoursFor
        self.daysFor = daysFor
    }

    /// Rows older than this may need folding or dropping at `now`: the store
    /// reads only those.
    public func oldestUntouched(now: Int64) -> Int64 {
        max(UTCCalendar.floor(now - samplesFor, to: 3600), UTCCalendar.floor(now - hoursFor, to: 86400), now - daysFor)
    }

    /// The resolution a row taken at `time` should have at `now` (at least
    /// the one it has), or nil when it is to be dropped.
    public func resolution(of row: MetricsSample, now: Int64) -> MetricsResolution? {
        if row.time < now - daysFor { return nil }
        if UTCCalendar.floor(row.time, to: 86400) + 86400 <= now - hoursFor { return max(row.resolution, .day) }
        if UTCCalendar.floor(row.time, to: 3600) + 3600 <= now - samplesFor { return max(row.resolution, .hour) }
        return row.resolution
    }

    /// What to change in the history at `now`, given its rows (with their
    /// keys, in any order).
    public func compaction<Key: Hashable & Sendable>(of rows: [(key: Key, row: MetricsSample)], now: Int64) -> MetricsCompaction<Key> {
        var result = MetricsCompaction<Key>()
        var buckets: [Bucket: [(key: Key, row: MetricsSample)]] = [:]
        for item in rows {
            guard let target = resolution(of: item.row, now: now) else {
                result.removals.append(item.key)
                continue
            }
            buckets[Bucket(resolution: target, index: UTCCalendar.floor(item.row.time, to: target.seconds)), default: []]
                .append(item)
        }
        for (bucket, items) in buckets.sorted(by: { $0.key.index < $1.key.index }) {
            if items.count == 1, items[0].row.resolution == bucket.resolution { continue }
            let sorted = items.sorted { $0.row.time < $1.row.time }
            result.removals += sorted.map(\.key)
            result.insertions.append(MetricsSample.folded(sorted.map(\.row), into: bucket.resolution))
        }
        return result
    }
}

/// The rows of one resolution that fold into one.
private struct Bucket: Hashable {
    var resolution: MetricsResolution
    var index: Int64
}

/// Rows to delete and rows to add, in one transaction.
public struct MetricsCompaction<Key: Hashable & Sendable>: Sendable {
    public var removals: [Key] = []
    public var insertions: [MetricsSample] = []

    public init() {}

    public var isEmpty: Bool { removals.isEmpty && insertions.isEmpty }
}
