import Foundation
import PurgeCore
import PurgeStore
import PurgeSys
import Synchronization

/// MetricKit's 2026 entry point, for the storage metrics of the app's
/// container on a purgefs mount.
///
/// `metricReports` delivers each complete UTC day of the mount's metrics
/// history once per app, past days first, then each new day at its end;
/// `purgefs metrics --deliver MOUNT` makes it deliver a report of today so
/// far at once (Xcode's "Simulate MetricKit Payloads"). What was delivered
/// is kept in the container's state directory (`metrics-delivered`), by app:
/// `PURGEFS_APP` when set, else the process's name. Off a mount, or where
/// the state directory cannot be reached (another user's daemon), the
/// sequence ends at once after one line on stderr: there is nothing to report.
public final class MetricManager: Sendable {
    public init() {}

    public var metricReports: some AsyncSequence<MetricReport, Never> { MetricReports() }
}

/// One iteration of `metricReports`. Each report is recorded as delivered,
/// under the delivery book's lock, in the `next()` that hands it over:
/// a consumer that stops after some loses none of the rest to the next
/// iteration, and two managers (of two apps, or two processes) never lose
/// each other's deliveries or get one twice.
struct MetricReports: AsyncSequence {
    typealias Element = MetricReport
    typealias Failure = Never

    func makeAsyncIterator() -> Iterator { Iterator() }

    struct Iterator: AsyncIteratorProtocol {
        typealias Element = MetricReport
        typealias Failure = Never

        /// How often the clock and the request file are looked at.
        static let pollInterval: Duration = .milliseconds(200)
        /// How many days of history a first delivery reaches back (MetricsRetention keeps daily rows ten years).
        static let firstDays = 3660

        private var source: MetricsSource?
        private var ended = false
        /// Until when the history has nothing due (the end of today, once looked at).
        private var nextDayEnd = Int64.min
        private let app = MetricsDeliveries.name(CurrentProcess.environmentValue("PURGEFS_APP").flatMap { $0.isEmpty ? nil : $0 }
            ?? ProcessInfo.processInfo.processName)

        mutating func next() async -> MetricReport? {
            guard !ended, let source = located() else { return nil }
            while !Task.isCancelled {
                let now = Int64(WallClock.nanoseconds() / 1_000_000_000)
                let lookAtHistory = now >= nextDayEnd
                let request = source.request()
                var handed: MetricReport?
                var historyDone = false
                let app = self.app
                let recorded = await source.update { book in
                    var entry = book.apps[app] ?? MetricsDeliveries.App()
                    if lookAtHistory {
                        let first = entry.deliveredThrough.map { $0 + 86400 } ?? MetricsDay.firstTime(last: Self.firstDays, now: now)
                        if let day = MetricsDeliveries.due(source.days(from: first, now: now), after: entry.deliveredThrough, now: now).first {
                            handed = MetricReport(day, now: now)
                            entry.deliveredThrough = day.start
                            book.apps[app] = entry
                            return true
                        }
                        historyDone = true
                    }
                    guard request > entry.servedRequest else { return false }
                    if let today = source.days(from: UTCCalendar.day(of: now), now: now).last, !today.isComplete(now: now) {
                        handed = MetricReport(today, now: now)
                    }
                    entry.servedRequest = request
                    book.apps[app] = entry
                    return true
                }
                guard let recorded else {  // the book could not be locked or written: nothing this time
                    try? await Task.sleep(for: Self.pollInterval)
                    continue
                }
                if historyDone { nextDayEnd = UTCCalendar.day(of: now) + 86400 }
                if let handed { return handed }
                if !recorded { try? await Task.sleep(for: Self.pollInterval) }
            }
            ended = true
            return nil
        }

        /// The mount's history and book, found at the first `next()`; off a
        /// mount, one line on stderr and the sequence ends.
        private mutating func located() -> MetricsSource? {
            if let source { return source }
            switch MetricsSource.locate() {
            case .success(let found):
                source = found
                return found
            case .failure(let reason):
                FileHandleOutput.standardError("PurgeKit: MetricManager: \(reason); no metric reports")
                ended = true
                return nil
            }
        }
    }
}

/// Where a container's metrics history and delivery book are: the state
/// directory of the daemon serving its mount, reached through
/// `/proc/PID/fd/N` as the `purgefs` command reaches it.
struct MetricsSource: Sendable {
    var mountPoint: String
    var stateDirectory: String

    static func locate() -> Result<MetricsSource, LocateError> {
        guard let root = AppContainer.root else { return .failure(.init("neither PURGEFS_CONTAINER nor PURGEFS_MOUNT is set")) }
        guard let mount = PurgeMount.containing(root.path) else { return .failure(.init("\(root.path) is not on a purgefs mount")) }
        switch RuntimeRecord.lookup(mountID: mount.entry.id) {
        case .found(let record):
            let directory = record.stateDirectoryPath
            guard (try? Paths.isDirectory(directory)) == true else {
                return .failure(.init("cannot reach the state directory of the daemon (pid \(record.processID)) serving \(mount.mountPoint)"))
            }
            return .success(MetricsSource(mountPoint: mount.mountPoint, stateDirectory: directory))
        case .unreadable(let path):
            return .failure(.init("the runtime record \(path) of \(mount.mountPoint) is unreadable"))
        case .refused(let line):
            return .failure(.init(line))
        case .missing:
            return .failure(.init("no runtime record of the mount at \(mount.mountPoint)"))
        }
    }

    struct LocateError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// The days of the history from `first` on, oldest first; none when it cannot be read.
    func days(from first: Int64, now: Int64) -> [MetricsDay] {
        do throws(MetricsStoreError) {
            let store = try MetricsStore(path: stateDirectory + "/" + MetricsStore.fileName, mode: .readOnly)
            let rows = try store.samples(in: first..<Int64.max)
            return MetricsDay.days(of: rows, last: Int((now - first) / 86400) + 1, now: now)
        } catch {
            return []
        }
    }

    func request() -> UInt64 {
        guard let data = try? FileDescriptor.readFile(stateDirectory + "/" + MetricsDeliveries.requestFileName, limit: 4096) else { return 0 }
        return MetricsDeliveries.request(decoding: String(decoding: data, as: UTF8.self))
    }

    /// How long a manager waits for another to let go of the book.
    static let lockPatience: Duration = .seconds(5)

    /// Runs `body` on the delivery book under its lock (`metrics-delivered.lock`,
    /// `flock`), and writes the book back when `body` returns true. Returns
    /// what `body` returned; nil when the book could not be locked or written
    /// (said once on stderr): then nothing is delivered this time.
    func update(_ body: (inout MetricsDeliveries) -> Bool) async -> Bool? {
        let lockPath = stateDirectory + "/" + MetricsDeliveries.lockFileName
        let lock: FileDescriptor
        do throws(Errno) {
            lock = try FileDescriptor.open(path: lockPath, flags: O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode: 0o644)
        } catch {
            Self.warnOnce("cannot open \(lockPath): \(error)")
            return nil
        }
        defer { lock.closeQuietly() }
        let deadline = ContinuousClock.now + Self.lockPatience
        while (try? lock.lockExclusivelyWithoutWaiting()) != true {
            guard ContinuousClock.now < deadline, !Task.isCancelled else { return nil }
            try? await Task.sleep(for: .milliseconds(10))
        }
        let path = stateDirectory + "/" + MetricsDeliveries.fileName
        var book = (try? FileDescriptor.readFile(path, limit: 1 << 20))
            .flatMap { MetricsDeliveries(decoding: String(decoding: $0, as: UTF8.self)) } ?? MetricsDeliveries()
        guard body(&book) else { return false }
        do throws(Errno) {
            try Paths.replaceFile(MetricsDeliveries.fileName, in: stateDirectory, with: book.encoded)
        } catch {
            Self.warnOnce("cannot record deliveries in \(stateDirectory): \(error)")
            return nil
        }
        return true
    }

    private static let warned = Atomic<Bool>(false)

    private static func warnOnce(_ line: String) {
        if !warned.exchange(true, ordering: .relaxed) { FileHandleOutput.standardError("PurgeKit: MetricManager: " + line) }
    }
}
