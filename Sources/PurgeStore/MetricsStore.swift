import PurgeCore

/// The metrics history: `metrics.db` in the state directory, an SQLite
/// database in WAL mode with `synchronous=NORMAL`, so each sample is one
/// small commit and a killed daemon loses at most the sample it was writing
/// (a power cut may lose the last commits, never the file).
///
/// Schema version 1 (`PRAGMA user_version`): one table `samples`, a row per
/// `MetricsSample`, indexed by time. Sizes are stored as SQLite's signed
/// 64-bit integers holding the unsigned values' bits.
///
/// One connection, used from one thread at a time.
public final class MetricsStore {
    private let database: SQLiteDatabase
    public let path: String

    /// The file's name in the state directory.
    public static let fileName = "metrics.db"
    public static let schemaVersion: Int64 = 1

    public enum Mode: Sendable {
        /// The daemon: creates the file and the schema when missing.
        case readWrite
        /// The command: never writes; the file must exist.
        case readOnly
    }

    /// Opens (or, read-write, creates) the store at `path` and checks that it
    /// is a sound database of a schema this version knows.
    public init(path: String, mode: Mode) throws(MetricsStoreError) {
        self.path = path
        do {
            database = try SQLiteDatabase(path: path, mode: mode == .readWrite ? .readWrite : .readOnly)
        } catch {
            throw error.isCannotOpen ? .missing(path) : .unreadable(path, error)
        }
        do {
            let version = try integer("PRAGMA user_version")
            if version > Self.schemaVersion { throw MetricsStoreError.newerSchema(path, version) }
            if mode == .readWrite {
                try database.execute("PRAGMA journal_mode=WAL")
                try database.execute("PRAGMA synchronous=NORMAL")
                if version < Self.schemaVersion { try createSchema() }
            } else if version == 0 {
                // An empty file, or one the daemon had not finished creating.
                if try integer("SELECT count(*) FROM sqlite_master WHERE name = 'samples'") == 0 {
                    throw MetricsStoreError.unreadable(path, SQLiteError(code: 26, message: "no metrics schema in it"))
                }
            }
            let check = try database.query("PRAGMA quick_check")
            guard check.count == 1, check[0] == [.text("ok")] else {
                throw MetricsStoreError.unreadable(path, SQLiteError(code: 11, message: "quick_check: \(check.prefix(3))"))
            }
        } catch let error as MetricsStoreError {
            throw error
        } catch let error as SQLiteError {
            throw .unreadable(path, error)
        } catch {
            preconditionFailure("unexpected error \(error)")
        }
    }

    private static let columns = [
        "start", "time", "resolution", "sample_count",
        "binary_file_size", "data_file_size", "cache_folder_size", "clone_size",
        "binary_file_count", "data_file_count", "cache_file_count",
        "logical_size", "purgeable", "purged_bytes", "purged_files", "purged_bytes_total", "purged_files_total",
        "capacity", "available",
    ]

    private func createSchema() throws(SQLiteError) {
        try database.transaction { () throws(SQLiteError) in
            try database.execute("""
                CREATE TABLE IF NOT EXISTS samples (
                    id INTEGER PRIMARY KEY,
                    \(Self.columns.map { "\($0) INTEGER NOT NULL" }.joined(separator: ",\n    "))
                );
                CREATE INDEX IF NOT EXISTS samples_by_time ON samples(time);
                PRAGMA user_version = \(Self.schemaVersion);
                """)
        }
    }

    private func integer(_ sql: String) throws(SQLiteError) -> Int64 {
        guard case .integer(let value)? = try database.query(sql).first?.first else { return 0 }
        return value
    }

    // MARK: Writing

    /// Stores one sample, in its own commit.
    public func insert(_ sample: MetricsSample) throws(MetricsStoreError) {
        try wrapping { () throws(SQLiteError) in try insertRow(sample) }
    }

    private func insertRow(_ sample: MetricsSample) throws(SQLiteError) {
        let placeholders = Array(repeating: "?", count: Self.columns.count).joined(separator: ", ")
        try database.query("INSERT INTO samples (\(Self.columns.joined(separator: ", "))) VALUES (\(placeholders))",
                           Self.values(of: sample))
    }

    /// Folds and drops old rows as `retention` says, at `now`, in one
    /// transaction. Returns how many rows were removed and added.
    @discardableResult
    public func compact(now: Int64, retention: MetricsRetention = MetricsRetention()) throws(MetricsStoreError) -> (removed: Int, added: Int) {
        var result = (removed: 0, added: 0)
        try wrapping { () throws(SQLiteError) in
            let cutoff = retention.oldestUntouched(now: now)
            var rows: [(key: Int64, row: MetricsSample)] = []
            try database.each("SELECT id, \(Self.columns.joined(separator: ", ")) FROM samples WHERE time < ?", [.integer(cutoff)]) { row in
                if case .integer(let id) = row[0], let sample = Self.sample(from: row.dropFirst()) { rows.append((id, sample)) }
            }
            let plan = retention.compaction(of: rows, now: now)
            guard !plan.isEmpty else { return }
            try database.transaction { () throws(SQLiteError) in
                for key in plan.removals { try database.query("DELETE FROM samples WHERE id = ?", [.integer(key)]) }
                for row in plan.insertions { try insertRow(row) }
            }
            result = (plan.removals.count, plan.insertions.count)
        }
        return result
    }

    // MARK: Reading

    /// The rows whose `time` lies in `range`, oldest first.
    public func samples(in range: Range<Int64>) throws(MetricsStoreError) -> [MetricsSample] {
        var samples: [MetricsSample] = []
        try wrapping { () throws(SQLiteError) in
            try database.each("SELECT \(Self.columns.joined(separator: ", ")) FROM samples WHERE time >= ? AND time < ? ORDER BY time, id",
                              [.integer(range.lowerBound), .integer(range.upperBound)]) { row in
                if let sample = Self.sample(from: row[...]) { samples.append(sample) }
            }
        }
        return samples
    }

    /// The most recent row, if any.
    public func latest() throws(MetricsStoreError) -> MetricsSample? {
        var latest: MetricsSample?
        try wrapping { () throws(SQLiteError) in
            try database.each("SELECT \(Self.columns.joined(separator: ", ")) FROM samples ORDER BY time DESC, id DESC LIMIT 1") { row in
                latest = Self.sample(from: row[...])
            }
        }
        return latest
    }

    /// How many rows the history holds.
    public func count() throws(MetricsStoreError) -> Int {
        var count: Int64 = 0
        try wrapping { () throws(SQLiteError) in count = try integer("SELECT count(*) FROM samples") }
        return Int(count)
    }

    // MARK: Rows

    private func wrapping(_ body: () throws(SQLiteError) -> Void) throws(MetricsStoreError) {
        do { try body() } catch { throw .unreadable(path, error) }
    }

    private static func values(of sample: MetricsSample) -> [SQLiteDatabase.Value] {
        let numbers: [UInt64] = [
            sample.binaryFileSize, sample.dataFileSize, sample.cacheFolderSize, sample.cloneSize,
            sample.binaryFileCount, sample.dataFileCount, sample.cacheFileCount,
            sample.logicalSize, sample.purgeable, sample.purgedBytes, sample.purgedFiles,
            sample.purgedBytesTotal, sample.purgedFilesTotal, sample.capacity, sample.available,
        ]
        return [.integer(sample.start), .integer(sample.time), .integer(Int64(sample.resolution.rawValue)),
                .integer(Int64(bitPattern: sample.sampleCount))]
            + numbers.map { .integer(Int64(bitPattern: $0)) }
    }

    private static func sample(from row: ArraySlice<SQLiteDatabase.Value>) -> MetricsSample? {
        let numbers = row.map { value -> Int64? in if case .integer(let n) = value { n } else { nil } }
        guard numbers.count == columns.count, !numbers.contains(nil) else { return nil }
        let n = numbers.map { $0! }
        guard let resolution = MetricsResolution(rawValue: Int(n[2])) else { return nil }
        func u(_ index: Int) -> UInt64 { UInt64(bitPattern: n[index]) }
        var sample = MetricsSample(start: n[0], time: n[1])
        sample.resolution = resolution
        sample.sampleCount = u(3)
        sample.binaryFileSize = u(4)
        sample.dataFileSize = u(5)
        sample.cacheFolderSize = u(6)
        sample.cloneSize = u(7)
        sample.binaryFileCount = u(8)
        sample.dataFileCount = u(9)
        sample.cacheFileCount = u(10)
        sample.logicalSize = u(11)
        sample.purgeable = u(12)
        sample.purgedBytes = u(13)
        sample.purgedFiles = u(14)
        sample.purgedBytesTotal = u(15)
        sample.purgedFilesTotal = u(16)
        sample.capacity = u(17)
        sample.available = u(18)
        return sample
    }
}

/// Why the history cannot be used.
public enum MetricsStoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// There is no store at that path.
    case missing(String)
    /// Not a database, a damaged one, or one that cannot be read.
    case unreadable(String, SQLiteError)
    /// Written by a newer purgefs, with a schema this one does not know.
    case newerSchema(String, Int64)

    public var description: String {
        switch self {
        case .missing(let path): return "no metrics history at \(path)"
        case .unreadable(let path, let error): return "the metrics history \(path) is unreadable: \(error)"
        case .newerSchema(let path, let version):
            return "the metrics history \(path) has schema version \(version), newer than this purgefs knows (\(MetricsStore.schemaVersion))"
        }
    }

    /// Whether the file should be set aside and a new one started (the
    /// daemon does; a missing file is simply created).
    public var shouldSetAside: Bool {
        switch self {
        case .missing: return false
        case .unreadable, .newerSchema: return true
        }
    }
}
