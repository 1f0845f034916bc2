import Dispatch
import Glibc
import PurgeCore
import PurgeStore
import PurgeSys
import Synchronization

/// Samples the container's totals into the metrics history (`metrics.db`
/// in the state directory): once at mount, every `metrics_interval`, and
/// once at unmount. Figures come from the ledger under the state lock (the
/// root's totals, the bundle's, the zones'), purges from the counters, the
/// device from `status()`.
///
/// The store is reached through the state directory's descriptor
/// (`/proc/self/fd/N/metrics.db`: SQLite needs a path, and an in-place
/// mount covers the real one). A store that cannot be read is set aside as
/// `metrics.db.corrupt-EPOCH` with a line in the daemon log, and a new one
/// is started; if even that fails, the mount goes on without metrics.
final class MetricsSampler: Sendable {
    private let state: ContainerState
    private let root: FileDescriptor
    private let directory: StateDirectory
    private let scope: MetricsScope
    private let interval: UInt64
    private let log: FileDescriptor
    /// Signalled to stop, or by `user.purgefs.metrics_sample` for a sample now.
    private let wake: DispatchSemaphore
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    /// How often old rows are folded (`MetricsRetention`).
    static let compactEvery: Int64 = 3600

    /// `log`: the daemon log, written to directly so a warning at mount
    /// lands there even before stderr is redirected to it.
    init(state: ContainerState, root: FileDescriptor, directory: StateDirectory, options: MountOptions, log: FileDescriptor,
         requests: MetricsRequests = MetricsRequests()) {
        self.wake = requests.wake
        self.state = state
        self.root = root
        self.directory = directory
        self.scope = MetricsScope(bundle: options.bundle, zones: options.purgeableZones)
        self.interval = options.metricsIntervalSeconds
        self.log = log
    }

    var storePath: String { "/proc/self/fd/\(directory.descriptor.rawValue)/\(MetricsStore.fileName)" }

    /// Opens the store and takes the mount's sample (returning once it is
    /// stored), then samples on a thread of its own every interval.
    func start() {
        let ready = DispatchSemaphore(value: 0)
        DispatchQueue(label: "purgefs.metrics-sampler").async { [self] in
            defer { finished.signal() }
            guard let store = openStore() else {
                ready.signal()
                return
            }
            var previous = try? store.latest()
            var lastCompaction: Int64? = nil
            record(into: store, previous: &previous, lastCompaction: &lastCompaction)
            ready.signal()
            while !stopping.load(ordering: .acquiring) {
                _ = wake.wait(timeout: .now() + .seconds(Int(min(interval, UInt64(Int32.max)))))
                if stopping.load(ordering: .acquiring) { break }
                record(into: store, previous: &previous, lastCompaction: &lastCompaction)
            }
            // The unmount's sample.
            record(into: store, previous: &previous, lastCompaction: &lastCompaction)
        }
        ready.wait()
    }

    /// Takes the last sample and waits for it to be stored.
    func stop() {
        stopping.store(true, ordering: .releasing)
        wake.signal()
        finished.wait()
    }

    // MARK: Sampling

    private func record(into store: MetricsStore, previous: inout MetricsSample?, lastCompaction: inout Int64?) {
        let now = Int64(WallClock.nanoseconds() / 1_000_000_000)
        let sample = takeSample(now: now, previous: previous)
        do {
            try store.insert(sample)
            previous = sample
            if lastCompaction.map({ now - $0 >= Self.compactEvery }) ?? true {
                try store.compact(now: now)
                lastCompaction = now
            }
        } catch {
            Diagnostics.note("cannot record a metrics sample: \(error)")
        }
    }

    /// The container's figures now.
    func takeSample(now: Int64, previous: MetricsSample?) -> MetricsSample {
        let bundle = scope.bundle.flatMap(resolve)
        let status = state.status()
        let counters = state.purgeCounters
        let parts: MetricsParts = state.withBooks { books in
            let ledger = books.ledger  // a copy-on-write reference, not a copy
            var bundleTotals: Totals?
            if let bundle {
                if let totals = try? ledger.totals(of: bundle) {
                    bundleTotals = totals
                } else if let file = try? ledger.file(bundle), file.links > 0 {
                    bundleTotals = Totals(size: file.size, files: 1, allocated: file.allocated, cloneSavings: file.cloneSavings)
                }
            }
            var zones: [String: Totals] = [:]
            for (path, id) in books.zones.directories {
                zones[path] = try? ledger.totals(of: id)
            }
            return scope.parts(root: ledger.rootTotals, bundle: bundleTotals, zones: zones)
        }
        var sample = MetricsSample(start: previous?.time ?? now, time: now)
        sample.setFigures(parts)
        sample.setPurged(bytesTotal: counters.bytes, filesTotal: counters.files, previous: previous)
        sample.capacity = status.capacity
        sample.available = status.available
        return sample
    }

    /// The identity of the bundle's file or directory, reached from the root
    /// one component at a time without following a symlink; nil when it is
    /// not there.
    private func resolve(_ path: String) -> EntryID? {
        guard var current = try? root.duplicate() else { return nil }
        defer { current.closeQuietly() }
        for component in path.split(separator: "/") {
            guard let next = try? FileDescriptor.open(String(component), in: current, flags: OpenFlags.path | O_NOFOLLOW)
            else { return nil }
            current.closeQuietly()
            current = next
        }
        guard let status = try? current.status() else { return nil }
        return EntryID(status)
    }

    // MARK: The store

    /// The store, set aside and started afresh when unreadable; nil when no
    /// store can be had (said in the log: the mount goes on).
    private func openStore() -> MetricsStore? {
        makeStorePrivate()
        do {
            return try MetricsStore(path: storePath, mode: .readWrite)
        } catch where error.shouldSetAside {
            let aside = "\(MetricsStore.fileName).corrupt-\(WallClock.nanoseconds() / 1_000_000_000)"
            do {
                try setAside(as: aside)
            } catch {
                warn("the metrics history \(MetricsStore.fileName) is unreadable (\(error)) and cannot be set aside: \(error); no metrics this mount")
                return nil
            }
            warn("the metrics history was unreadable (\(Self.reason(error))): set aside as \(aside); starting a new one")
            makeStorePrivate()
            do {
                return try MetricsStore(path: storePath, mode: .readWrite)
            } catch {
                warn("cannot start a new metrics history: \(error); no metrics this mount")
                return nil
            }
        } catch {
            warn("cannot open the metrics history: \(error); no metrics this mount")
            return nil
        }
    }

    private static func reason(_ error: MetricsStoreError) -> String {
        switch error {
        case .unreadable(_, let cause): return cause.description
        case .newerSchema(_, let version): return "schema version \(version) is newer than this purgefs knows"
        case .missing: return "missing"
        }
    }

    /// Renames the store (and its write-ahead log) aside; drops its shared-memory index.
    /// The history and its WAL and shared-memory files are `0600`: SQLite
    /// makes the WAL and `-shm` with the database's mode, and would make the
    /// database itself `0644` (less the umask). So it is made here first,
    /// and ones an older purgefs made are tightened.
    private func makeStorePrivate() {
        for suffix in ["", "-wal", "-shm"] {
            do throws(Errno) { try directory.makePrivate(MetricsStore.fileName + suffix, create: suffix.isEmpty) } catch where error == .noEntry {
            } catch {
                warn("cannot make the metrics history's \(MetricsStore.fileName + suffix) 0600: \(error)")
            }
        }
    }

    private func setAside(as aside: String) throws(Errno) {
        let name = MetricsStore.fileName
        try directory.descriptor.rename(name, to: aside, in: directory.descriptor)
        do {
            try directory.descriptor.rename(name + "-wal", to: aside + "-wal", in: directory.descriptor)
        } catch where error == .noEntry {}
        do { try directory.descriptor.unlink(name + "-shm") } catch {}
        try directory.descriptor.sync()
    }

    /// One line in the daemon log, and on stderr too while that is not the log.
    private func warn(_ line: String) {
        try? log.writeAll("purgefs: " + line + "\n")
        let logStatus = try? log.status()
        let errorStatus = try? FileDescriptor.standardError.status()
        if logStatus?.st_dev != errorStatus?.st_dev || logStatus?.st_ino != errorStatus?.st_ino {
            Diagnostics.note(line)
        }
    }
}

/// Requests for a metrics sample now (`user.purgefs.metrics_sample`, which
/// `purgefs metrics --deliver` writes): a handler signals and returns, the
/// sampler's thread takes the sample. Several requests before it wakes make
/// as many samples, each a moment later: harmless.
final class MetricsRequests: Sendable {
    let wake = DispatchSemaphore(value: 0)

    func requestSample() { wake.signal() }
}
