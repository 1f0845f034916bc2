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

    public var metricReports: some AsyncSequence<MetricReport, Never> {
        AsyncStream<MetricReport> { continuation in
            let task = Task.detached {
                await MetricsDelivery.run(into: continuation)
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

/// The delivering loop of one `metricReports` iteration.
enum MetricsDelivery {
    /// How often the clock and the request file are looked at.
    static let pollInterval: Duration = .milliseconds(200)
    /// How many days of history a first delivery reaches back (MetricsRetention keeps daily rows ten years).
    static let firstDays = 3660

    static var app: String {
        MetricsDeliveries.name(CurrentProcess.environmentValue("PURGEFS_APP").flatMap { $0.isEmpty ? nil : $0 }
            ?? ProcessInfo.processInfo.processName)
    }

    static func run(into continuation: AsyncStream<MetricReport>.Continuation) async {
        let source: MetricsSource
        switch MetricsSource.locate() {
        case .success(let found): source = found
        case .failure(let reason):
            FileHandleOutput.standardError("PurgeKit: MetricManager: \(reason); no metric reports")
            return
        }
        let app = Self.app
        var nextDayEnd = Int64.min  // look at the history at once
        while !Task.isCancelled {
            let now = Int64(WallClock.nanoseconds() / 1_000_000_000)
            let lookAtHistory = now >= nextDayEnd
            let request = source.request()
            var reports: [MetricReport] = []
            // Recorded before they are handed over, under the book's lock: two
            // managers (of two apps, or two processes) never lose each other's
            // deliveries, and a day is delivered at most once.
            let recorded = await source.update { book in
                var entry = book.apps[app] ?? MetricsDeliveries.App()
                let before = entry
                if lookAtHistory {
                    let first = entry.deliveredThrough.map { $0 + 86400 } ?? MetricsDay.firstTime(last: firstDays, now: now)
                    for day in MetricsDeliveries.due(source.days(from: first, now: now), after: entry.deliveredThrough, now: now) {
                        reports.append(MetricReport(day, now: now))
                        entry.deliveredThrough = day.start
                    }
                }
                if request > entry.servedRequest {
                    if let today = source.days(from: UTCCalendar.day(of: now), now: now).last, !today.isComplete(now: now) {
                        reports.append(MetricReport(today, now: now))
                    }
                    entry.servedRequest = request
                }
                guard entry != before else { return false }
                book.apps[app] = entry
                return true
            }
            if recorded != nil {
                for report in reports { continuation.yield(report) }
                if lookAtHistory { nextDayEnd = UTCCalendar.day(of: now) + 86400 }
            }
            try? await Task.sleep(for: pollInterval)
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
        let lockPath = stateDirectory + "/" + MetricsDeliveries.fileName + ".lock"
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
