import Foundation
import PurgeCore

/// A daily report in the shape of MetricKit's 2026 `MetricReport`: the day
/// (`timeRange`), its full-day entry and its shorter interval entries, each
/// with its metric values. Made from the mount's metrics history.
public struct MetricReport: Codable, Sendable, Equatable {
    /// The UTC day the report covers (for a report of today so far: midnight to now).
    public let timeRange: DateInterval
    /// The full-day entry (the longest, first) and the day's samples.
    public let intervalEntries: [IntervalEntry]

    /// One interval's values.
    public struct IntervalEntry: Codable, Sendable, Equatable {
        /// How long the interval is (the full-day entry's: 24 hours).
        public let duration: Measurement<UnitDuration>
        public let values: [MetricResult]
    }

    init(timeRange: DateInterval, intervalEntries: [IntervalEntry]) {
        self.timeRange = timeRange
        self.intervalEntries = intervalEntries
    }

    private enum CodingKeys: String, CodingKey { case timeRange, intervalEntries }

    /// A report without entries is refused here, so that `fullDayEntry`,
    /// not optional as MetricKit's, never meets one.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        timeRange = try container.decode(DateInterval.self, forKey: .timeRange)
        intervalEntries = try container.decode([IntervalEntry].self, forKey: .intervalEntries)
        guard !intervalEntries.isEmpty else {
            throw DecodingError.dataCorruptedError(forKey: .intervalEntries, in: container,
                                                   debugDescription: "a metric report has at least its full-day entry")
        }
    }
}

extension Array where Element == MetricReport.IntervalEntry {
    /// The entry spanning the whole day: the one with the longest duration.
    /// As MetricKit's, not optional; PurgeKit's reports always hold one.
    public var fullDayEntry: MetricReport.IntervalEntry {
        guard let longest = self.max(by: { $0.duration.converted(to: .seconds).value < $1.duration.converted(to: .seconds).value })
        else { preconditionFailure("fullDayEntry of no interval entries") }
        return longest
    }
}

/// One metric's value, MetricKit's `MetricResult` for the storage metrics.
public enum MetricResult: Codable, Sendable, Equatable {
    case totalFileSize(TotalFileSizeMetric)
    case totalFileCount(TotalFileCountMetric)
    case totalDiskSpaceCapacity(TotalDiskSpaceCapacityMetric)
}

/// The sizes of the app's files, bytes on disk (clone-shared data once).
public struct TotalFileSizeMetric: Codable, Sendable, Equatable, Hashable {
    /// The app itself: the mount's `bundle=` subtree (0 without `bundle=`).
    public let binaryFileSize: Measurement<UnitInformationStorage>
    /// The purgeable zones (`Library/Caches`, `caches`, `tmp` by default).
    public let cacheFolderSize: Measurement<UnitInformationStorage>
    /// Bytes clones share with another file, stored once (the mount's `clone_savings`).
    public let cloneSize: Measurement<UnitInformationStorage>
    /// As MetricKit's: every file in the container but the app's, the cache folder included.
    public let dataFileSize: Measurement<UnitInformationStorage>
}

/// How many regular files the app has.
public struct TotalFileCountMetric: Codable, Sendable, Equatable, Hashable {
    public let binaryFileCount: Int
    /// As MetricKit's: every regular file in the container but the app's, caches included.
    public let dataFileCount: Int
}

/// The device: its capacity and what is in use on it.
public struct TotalDiskSpaceCapacityMetric: Codable, Sendable, Equatable, Hashable {
    public let capacity: Measurement<UnitInformationStorage>
    /// Capacity − available: the device's used space, other apps' included.
    public let spaceUsed: Measurement<UnitInformationStorage>
}

extension MetricReport {
    /// The report of a day of the history; `now` bounds a day still under way.
    init(_ day: MetricsDay, now: Int64) {
        let end = min(day.end, max(now, day.start))
        timeRange = DateInterval(start: Date(timeIntervalSince1970: TimeInterval(day.start)),
                                 end: Date(timeIntervalSince1970: TimeInterval(end)))
        intervalEntries = [IntervalEntry(day.fullDay)] + day.entries.map(IntervalEntry.init)
    }
}

extension MetricReport.IntervalEntry {
    init(_ sample: MetricsSample) {
        duration = Measurement(value: Double(sample.duration), unit: .seconds)
        values = MetricResult.results(of: sample)
    }
}

extension MetricResult {
    /// The storage metrics of one row of the history.
    static func results(of sample: MetricsSample) -> [MetricResult] {
        func bytes(_ value: UInt64) -> Measurement<UnitInformationStorage> { Measurement(value: Double(value), unit: .bytes) }
        return [
            .totalFileSize(TotalFileSizeMetric(
                binaryFileSize: bytes(sample.binaryFileSize),
                cacheFolderSize: bytes(sample.cacheFolderSize),
                cloneSize: bytes(sample.cloneSize),
                dataFileSize: bytes(sample.dataFileSize &+ sample.cacheFolderSize))),
            .totalFileCount(TotalFileCountMetric(
                binaryFileCount: Int(clamping: sample.binaryFileCount),
                dataFileCount: Int(clamping: sample.dataFileCount &+ sample.cacheFileCount))),
            .totalDiskSpaceCapacity(TotalDiskSpaceCapacityMetric(
                capacity: bytes(sample.capacity),
                spaceUsed: bytes(sample.capacity.subtractingClamped(sample.available)))),
        ]
    }
}
