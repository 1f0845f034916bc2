/// One day of the metrics history as MetricKit reports it: a daily report
/// with a full-day entry and its interval entries.
///
/// Days are UTC days (see `UTCCalendar`); a row belongs to the day that
/// holds its `time`, the moment its figures were taken, even when its
/// interval began the day before. The full-day entry spans the whole day
/// (86,400 seconds, as MetricKit's does): its file sizes, counts and device
/// figures are those of the day's last row (MetricKit's file metrics are
/// daily snapshots, not sums), and its purged bytes and files are the sums
/// over the day. For the current day it holds the figures so far.
public struct MetricsDay: Equatable, Sendable {
    /// Midnight UTC starting the day, seconds since the epoch.
    public var start: Int64
    /// The day's rows, oldest first: the interval entries.
    public var entries: [MetricsSample]

    public init(start: Int64, entries: [MetricsSample]) {
        self.start = start
        self.entries = entries
    }

    public var end: Int64 { start + 86400 }

    /// The full-day entry: the day's rows folded into one, spanning the day.
    public var fullDay: MetricsSample {
        var entry = MetricsSample.folded(entries, into: .day)
        entry.start = start
        entry.time = end
        return entry
    }

    /// Whether the day is over at `now`.
    public func isComplete(now: Int64) -> Bool { end <= now }

    /// The days holding `rows` (any order), oldest first, keeping only the
    /// last `days` UTC days up to `now` (today counts as one), and no day
    /// without rows.
    public static func days(of rows: [MetricsSample], last days: Int, now: Int64) -> [MetricsDay] {
        let first = firstTime(last: days, now: now)
        var byDay: [Int64: [MetricsSample]] = [:]
        for row in rows where row.time >= first {
            byDay[UTCCalendar.day(of: row.time), default: []].append(row)
        }
        return byDay.keys.sorted().map { day in
            MetricsDay(start: day, entries: byDay[day]!.sorted { ($0.time, $0.start) < ($1.time, $1.start) })
        }
    }

    /// The day's rows folded into hours (for a table a person reads): one
    /// per UTC hour that has rows, oldest first. Daily rows stay as they are.
    public var hourly: [MetricsSample] {
        var byHour: [Int64: [MetricsSample]] = [:]
        for entry in entries {
            byHour[UTCCalendar.floor(entry.time, to: 3600), default: []].append(entry)
        }
        return byHour.keys.sorted().map { hour in
            let rows = byHour[hour]!
            return MetricsSample.folded(rows, into: max(.hour, rows.map(\.resolution).max() ?? .hour))
        }
    }

    /// The earliest time a report of the last `days` days reads from.
    public static func firstTime(last days: Int, now: Int64) -> Int64 {
        UTCCalendar.day(of: now) - Int64(max(days, 1) - 1) * 86400
    }
}
