import Glibc
import PurgeCore
import PurgeEngines
import PurgeStore
import PurgeSys

/// `purgefs metrics MOUNTPOINT|CONTAINER [--json | --prometheus] [--days N]`:
/// the container's daily storage reports, or its current figures for
/// Prometheus. `purgefs metrics --deliver MOUNTPOINT`: a sample now, and a
/// request to PurgeKit's managers to deliver today's report so far.
struct MetricsCommand: Subcommand {
    static let name = "metrics"
    static let abstract = "Show daily storage reports, MetricKit style, or Prometheus metrics"
    static let help = """
        Usage: purgefs metrics MOUNTPOINT [--json | --prometheus] [--days N]
               purgefs metrics CONTAINER [--json | --prometheus] [--days N] [--state DIR]
               purgefs metrics --deliver MOUNTPOINT

        \(TextLayout.paragraph(
            "Shows the storage history a mount records (every metrics_interval, default 1h, and at mount and "
            + "unmount): one report per UTC day, with the day's full figures and its intervals, the way "
            + "MetricKit reports an app's total file size and total file count. Sizes are bytes on disk, "
            + "clone-shared data counted once: binary (the mount's bundle=), data (everything else but the "
            + "caches), cache folder (the purgeable zones) and clone size (bytes clones share, stored once); "
            + "counts are regular files. The table shows one row per hour (its last figures, its purges added "
            + "up) under a line with the day's totals and a sparkline of the total size through the day."))

        \(TextLayout.paragraph(
            "MOUNTPOINT is a purgefs mount, in place or not: the history is read from the state directory of "
            + "the daemon serving it. CONTAINER is a container that is not mounted over itself: the history is "
            + "read from CONTAINER/.purgefs/metrics.db, read-only, or from the state directory its last mount "
            + "used when that was another one (state=DIR, recorded in CONTAINER/.purgefs when it has one). A "
            + "state directory itself may be given as CONTAINER too."))

        Flags:
        \(flags.rows)

        JSON fields (sizes in bytes, times ISO 8601 UTC, durations in seconds):
        \(TextLayout.row("container, mountpoint", "the container, and the mount read (null for a container read directly)"))
        \(TextLayout.row("reports[]", "one per day: timeRange {start, end}, complete, intervalEntries[], stateEntries[] (always empty)"))
        \(TextLayout.row("intervalEntries[]", "the full-day entry first (fullDay true, duration 86400: the day's last figures, its purges added up), then each interval: start, end, duration, fullDay, resolution (sample, hour or day), sampleCount, values[], states[]"))
        \(TextLayout.row("values[]", paragraphs: [
            "{totalFileSize: {binaryFileSize, dataFileSize, cacheFolderSize, cloneSize}}",
            "{totalFileCount: {binaryFileCount, dataFileCount}}",
            "{purgefsStorage: {cacheFileCount, logicalSize, purgeableSize, purgedSize, purgedFileCount, capacity, available}}"]))
        """

    enum Output: Equatable {
        case table, json, prometheus, deliver
    }

    static let flags = FlagTable<Self>(name, [
        .switch("--json", \.jsonGiven, "the reports as JSON, in the shape of MetricKit's daily reports (fields below)"),
        .switch("--prometheus", \.prometheusGiven, "the current figures in Prometheus text format, for node_exporter's "
                    + "textfile collector; on a mount read live from its user.purgefs.* attributes, with each fault rule's "
                    + "matched and fired counters and purgefs_enospc_total (requests answered ENOSPC since the mount), else "
                    + "the latest sample; on a shared device (device=) also the device's figures, labelled device"),
        .value("--days", "N", \.days, "the last N UTC days, today included (default 7)") { value throws(CommandExit) in
            guard let days = Int(value.text), days >= 1, days <= maximumDays else {
                throw value.refused("give a whole number of days from 1 to \(maximumDays)")
            }
            return days
        },
        .switch("--deliver", \.deliverGiven, "like Xcode's Simulate MetricKit Payloads: the daemon takes a sample now, then "
                    + "every PurgeKit MetricManager of the container delivers a report of today so far (once per app; "
                    + "today's full report still comes at the day's end)"),
        StateLocator.flag(\.stateArgument, "read the history in DIR: for a container mounted with state=DIR"),
    ])

    var pathArgument = ""
    var output = Output.table
    var days = 7
    private var jsonGiven = false
    private var prometheusGiven = false
    private var deliverGiven = false
    var stateArgument: String?
    var access = AttributeAccess.live
    /// Set by `validate()`.
    private(set) var source: Source?
    private(set) var stateDirectory: String?

    /// Where the figures come from.
    struct Source: Equatable {
        var container: String
        var storePath: String
        /// The live mount, with the zones and bundle it was given.
        var mountpoint: String?
        var scope: MetricsScope?
    }

    static let maximumDays = 3660

    init(parsing arguments: [String]) throws(CommandExit) {
        let parsed = try Self.flags.parse(arguments, help: Self.help, into: &self)
        pathArgument = try parsed.onePath("MOUNTPOINT", command: Self.name)
        try Self.flags.apply(parsed, to: &self)
        if jsonGiven && prometheusGiven {
            throw .usage("\(Self.name): give --json or --prometheus, not both")
        }
        if jsonGiven { output = .json }
        if prometheusGiven { output = .prometheus }
        if deliverGiven {
            guard output == .table, parsed.values.isEmpty else {
                throw .usage("\(Self.name): --deliver takes only MOUNTPOINT")
            }
            output = .deliver
        }
    }

    mutating func validate() throws(CommandExit) {
        let state = try StateLocator.locate(pathArgument, state: stateArgument)
        if output == .deliver && state.mountpoint == nil {
            throw .failure("\(pathArgument) is not a purgefs mount: --deliver asks the daemon serving one for a sample")
        }
        stateDirectory = state.directory
        let storePath = state.directory + "/" + MetricsStore.fileName
        if let record = state.record, let mountpoint = state.mountpoint {
            source = Source(container: record.container, storePath: storePath,
                            mountpoint: mountpoint, scope: MetricsScope(bundle: record.bundle, zones: record.zones))
        } else {
            source = Source(container: state.container, storePath: storePath)
        }
    }

    func run(_ context: CommandContext) throws(CommandExit) {
        guard let source else { preconditionFailure("run() before validate()") }
        let now = Int64(WallClock.nanoseconds() / 1_000_000_000)
        if output == .deliver {
            try deliver(source, now: now)
            return
        }
        if output == .prometheus {
            let sample: MetricsSample
            var mountText: String?
            if let mountpoint = source.mountpoint, let scope = source.scope {
                sample = try Self.liveSample(mountpoint: mountpoint, scope: scope, access, now: now)
                if let enospc = try access.numberIfAnswered(.enospc, of: mountpoint) {
                    mountText = PrometheusText.mountText(enospc: enospc, container: source.container)
                }
            } else {
                guard let latest = try Self.withStore(source, { (store) throws(MetricsStoreError) in try store.latest() }) else {
                    throw .failure("no metrics samples yet in \(source.storePath)")
                }
                sample = latest
            }
            print(PrometheusText.text(sample, container: source.container))
            if let mountText { print(mountText) }
            if let mountpoint = source.mountpoint {
                // A daemon without fault rules support answers ENODATA: no counters then.
                let rules = (try? FaultCommand.listings(of: mountpoint, access)) ?? []
                let faults = PrometheusText.faultText(rules, container: source.container)
                if !faults.isEmpty { print(faults) }
            }
            if let mountpoint = source.mountpoint,
               let device = try PrometheusText.deviceFigures(mountpoint: mountpoint, access) {
                print(PrometheusText.deviceText(device, container: source.container))
            }
            return
        }
        let first = MetricsDay.firstTime(last: days, now: now)
        let rows = try Self.withStore(source) { (store) throws(MetricsStoreError) in try store.samples(in: first..<Int64.max) }
        let reports = MetricsDay.days(of: rows, last: days, now: now)
        switch output {
        case .json:
            print(MetricsJSON.document(container: source.container, mountpoint: source.mountpoint, days: days,
                                       reports: reports, now: now).pretty)
        case .table, .prometheus, .deliver:
            print(MetricsTable.text(container: source.container, days: reports, lastDays: days, now: now))
        }
    }

    /// How long `--deliver` waits for the daemon's sample.
    static let samplePatience = 10_000

    /// Asks the daemon for a sample, waits until it is in the history, then
    /// raises the delivery request number in the state directory.
    private func deliver(_ source: Source, now: Int64) throws(CommandExit) {
        guard let mountpoint = source.mountpoint, let stateDirectory else { preconditionFailure("validate() found no mount") }
        // A sample of the same second may be older than the request: the count tells a new row.
        let before = try Self.withStore(source) { (store) throws(MetricsStoreError) in try store.count() }
        try access.set(.metricsSample, of: mountpoint, to: "1",
                       refusal: "\(mountpoint) takes no metrics_sample (mounted by an older purgefs? remount it)")
        var waited = 0
        while true {
            let (count, latest) = try Self.withStore(source) { (store) throws(MetricsStoreError) in (try store.count(), try store.latest()) }
            if count != before, let latest, latest.time >= now { break }
            guard waited < Self.samplePatience else {
                throw .failure("the daemon serving \(mountpoint) took no metrics sample within \(Self.samplePatience / 1000) s")
            }
            CurrentProcess.sleep(milliseconds: 20)
            waited += 20
        }
        // Under the delivery book's lock, as the managers take it: two requests at once are two.
        let lockPath = stateDirectory + "/" + MetricsDeliveries.lockFileName
        let lock: FileDescriptor
        do throws(Errno) {
            lock = try FileDescriptor.open(path: lockPath, flags: O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode: 0o644)
        } catch {
            throw .failure("cannot open \(lockPath): \(error)")
        }
        defer { lock.closeQuietly() }
        var lockWaited = 0
        while (try? lock.lockExclusivelyWithoutWaiting()) != true {
            guard lockWaited < Self.samplePatience else {
                throw .failure("the delivery book \(lockPath) stayed locked for \(Self.samplePatience / 1000) s")
            }
            CurrentProcess.sleep(milliseconds: 10)
            lockWaited += 10
        }
        let requestPath = stateDirectory + "/" + MetricsDeliveries.requestFileName
        let previous = (try? FileDescriptor.readFile(requestPath, limit: 4096)).map { MetricsDeliveries.request(decoding: String(decoding: $0, as: UTF8.self)) } ?? 0
        do throws(Errno) {
            try Paths.replaceFile(MetricsDeliveries.requestFileName, in: stateDirectory, with: "\(previous + 1)\n")
        } catch {
            throw .failure("cannot write the delivery request in the state directory \(stateDirectory): \(error)")
        }
        print("Took a metrics sample of \(mountpoint); PurgeKit's MetricManagers of \(source.container) deliver today's report so far (request \(previous + 1)).")
    }

    /// Opens the history read-only and reads it; what goes wrong is one line.
    private static func withStore<T>(_ source: Source, _ body: (MetricsStore) throws(MetricsStoreError) -> T) throws(CommandExit) -> T {
        do throws(MetricsStoreError) {
            let store = try MetricsStore(path: source.storePath, mode: .readOnly)
            return try body(store)
        } catch {
            switch error {
            case .missing:
                throw .failure("no metrics history for \(source.container): \(source.storePath) does not exist (it is made at the first mount)")
            case .unreadable, .newerSchema:
                throw .failure(error.description)
            }
        }
    }

    /// The figures of a live mount, from its attributes, split as the daemon splits them.
    /// `isReal(path)`: whether a part's path is really there, not through a
    /// symlink (which the attribute calls would follow, counting something
    /// twice or reading outside the mount).
    static func liveSample(mountpoint: String, scope: MetricsScope, _ access: AttributeAccess, now: Int64,
                           isReal: (String) -> Bool = { (try? Paths.canonical($0)) == $0 }) throws(CommandExit) -> MetricsSample {
        guard let root = try DirectoryFigures.readIfPresent(mountpoint, access) else {
            throw .failure("\(mountpoint) does not answer user.purgefs.files (not a purgefs mount?)")
        }
        let device = try DeviceFigures.read(root: mountpoint, access)
        /// A part's figures when it is there, and a real directory or file (never through a symlink).
        func figures(_ relative: String) throws(CommandExit) -> Totals? {
            let path = mountpoint + "/" + relative
            guard isReal(path) else { return nil }
            if let directory = try DirectoryFigures.readIfPresent(path, access) { return directory.totals }
            guard let allocated = try access.numberIfAnswered(.allocated, of: path) else { return nil }
            return Totals(size: try access.number(.size, of: path), files: 1, allocated: allocated)
        }
        var zones: [String: Totals] = [:]
        for zone in scope.zones {
            if let totals = try figures(zone) { zones[zone] = totals }
        }
        let bundle = try scope.bundle.flatMap { (path) throws(CommandExit) -> Totals? in try figures(path) }
        var sample = MetricsSample(start: now, time: now)
        sample.setFigures(scope.parts(root: root.totals, bundle: bundle, zones: zones))
        sample.purgedBytesTotal = device.purgedBytes
        sample.purgedFilesTotal = device.purgedFiles
        sample.capacity = device.capacity
        sample.available = device.available
        return sample
    }
}

extension DirectoryFigures {
    var totals: Totals { Totals(size: size, files: files, allocated: allocated, purgeable: purgeable, cloneSavings: cloneSavings) }
}
