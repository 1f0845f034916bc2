/// One row of the metrics history: the container's figures at the end of an
/// interval, and what was purged during it.
///
/// The sizes follow MetricKit's `TotalFileSizeMetric` and the counts its
/// `TotalFileCountMetric`; sizes are bytes on disk (`allocated`), so
/// clone-shared data is counted once, as MetricKit counts it. The parts do
/// not overlap: binary (the `bundle=` subtree), cache folder (the purgeable
/// zones), data (everything else). MetricKit's own data size includes the
/// caches folder; theirs is `dataFileSize + cacheFolderSize` here.
///
/// A row stands for one sample as taken (`resolution` `.sample`) or for
/// several folded into an hour or a day (`MetricsRetention`): then the
/// figures are those of its last sample and the purged bytes and files are
/// the sums over all of them.
public struct MetricsSample: Equatable, Hashable, Sendable {
    /// Start of the interval this row closes: the previous sample's time
    /// (seconds since the epoch, UTC), or `time` for the very first sample.
    public var start: Int64
    /// When the figures were taken, seconds since the epoch, UTC.
    public var time: Int64
    public var resolution: MetricsResolution = .sample
    /// How many samples as taken this row stands for.
    public var sampleCount: UInt64 = 1

    /// The part of the container that is the app itself (`bundle=`).
    public var binaryFileSize: UInt64 = 0
    /// Everything that is neither binary nor cache folder.
    public var dataFileSize: UInt64 = 0
    /// The purgeable zones.
    public var cacheFolderSize: UInt64 = 0
    /// Bytes of clone files' data shared with another file, and so stored
    /// once: what copying without clones would add (the ledger's clone savings).
    public var cloneSize: UInt64 = 0
    public var binaryFileCount: UInt64 = 0
    public var dataFileCount: UInt64 = 0
    public var cacheFileCount: UInt64 = 0

    /// Logical bytes: the sum of the files' sizes (`user.purgefs.size`).
    public var logicalSize: UInt64 = 0
    /// Bytes purging could free now.
    public var purgeable: UInt64 = 0
    /// Purged during this interval.
    public var purgedBytes: UInt64 = 0
    public var purgedFiles: UInt64 = 0
    /// Purged since the container was created, at `time`: the next
    /// sample's purged bytes and files are measured from these.
    public var purgedBytesTotal: UInt64 = 0
    public var purgedFilesTotal: UInt64 = 0
    /// The device at `time`.
    public var capacity: UInt64 = 0
    public var available: UInt64 = 0

    public init(start: Int64, time: Int64) {
        self.start = start
        self.time = time
    }

    /// Binary + data + cache folder: the container's bytes on disk.
    public var totalFileSize: UInt64 { binaryFileSize &+ dataFileSize &+ cacheFolderSize }
    public var totalFileCount: UInt64 { binaryFileCount &+ dataFileCount &+ cacheFileCount }
    /// Seconds the row covers.
    public var duration: Int64 { time - start }

    /// Sets the file figures from the container's totals (see `MetricsScope`).
    public mutating func setFigures(_ parts: MetricsParts) {
        binaryFileSize = parts.binary.allocated
        binaryFileCount = parts.binary.files
        cacheFolderSize = parts.caches.allocated
        cacheFileCount = parts.caches.files
        dataFileSize = parts.root.allocated.subtractingClamped(parts.binary.allocated).subtractingClamped(parts.caches.allocated)
        dataFileCount = parts.root.files.subtractingClamped(parts.binary.files).subtractingClamped(parts.caches.files)
        cloneSize = parts.root.cloneSavings
        logicalSize = parts.root.size
        purgeable = parts.root.purgeable
    }

    /// Sets what was purged since `previous` from the counters now
    /// (totals since the container was created). Counters below the
    /// previous ones (a counters file lost) count as nothing purged.
    public mutating func setPurged(bytesTotal: UInt64, filesTotal: UInt64, previous: MetricsSample?) {
        purgedBytesTotal = bytesTotal
        purgedFilesTotal = filesTotal
        guard let previous else { return }
        purgedBytes = bytesTotal.subtractingClamped(previous.purgedBytesTotal)
        purgedFiles = filesTotal.subtractingClamped(previous.purgedFilesTotal)
    }

    /// `rows` (oldest first, at least one) as one row of `resolution`: the
    /// figures of the last, the purges of all, from the first one's start.
    public static func folded(_ rows: some Collection<MetricsSample>, into resolution: MetricsResolution) -> MetricsSample {
        // The last of the latest: two samples in one second (the mount's, and one `--deliver` asked for)
        // are in the order they were taken, and the later one's figures are the newer.
        var latest: MetricsSample?
        for row in rows where latest.map({ row.time >= $0.time }) ?? true { latest = row }
        guard var result = latest else { preconditionFailure("folding no rows") }
        result.resolution = resolution
        result.start = rows.map(\.start).min() ?? result.start
        result.sampleCount = rows.reduce(0) { $0 &+ $1.sampleCount }
        result.purgedBytes = rows.reduce(0) { $0 &+ $1.purgedBytes }
        result.purgedFiles = rows.reduce(0) { $0 &+ $1.purgedFiles }
        return result
    }
}

/// How much time a history row stands for.
public enum MetricsResolution: Int, Comparable, Hashable, Sendable, CaseIterable {
    /// One sample as taken.
    case sample = 0
    /// The samples of one UTC hour, folded.
    case hour = 1
    /// The samples of one UTC day, folded.
    case day = 2

    /// The length of the bucket rows are folded into, in seconds.
    public var seconds: Int64 {
        switch self {
        case .sample: return 1
        case .hour: return 3600
        case .day: return 86400
        }
    }

    public static func < (lhs: MetricsResolution, rhs: MetricsResolution) -> Bool { lhs.rawValue < rhs.rawValue }
}
