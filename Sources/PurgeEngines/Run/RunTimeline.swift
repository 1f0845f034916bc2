import PurgeCore
import PurgeSys

/// What `purgefs run` records over time for its report (`--json`,
/// `--report`) and its page (`--html`): the space figures sampled while
/// the command runs, what was purged and which faults fired (with their
/// times, from the mount's logs), the low and high marks, and the storage
/// breakdown when the command started and when it ended.
///
/// Times are milliseconds after the command started, as the steps' `at_ms`.
public struct RunTimeline: Equatable {
    struct Sample: Equatable {
        var atMilliseconds: UInt64
        var deviceUsed: UInt64
        var containerUsed: UInt64
        var purgeable: UInt64
        var available: UInt64
        /// Requests answered `ENOSPC` since the mount, so far.
        var enospc: UInt64

        /// The same figures, whatever the time.
        func sameFigures(as other: Sample) -> Bool {
            (deviceUsed, containerUsed, purgeable, available, enospc)
                == (other.deviceUsed, other.containerUsed, other.purgeable, other.available, other.enospc)
        }
    }

    struct Purge: Equatable {
        var atMilliseconds: UInt64
        var path: String
        var bytes: UInt64
        var reason: String
    }

    struct Fault: Equatable {
        var atMilliseconds: UInt64
        var rule: UInt64
        var operation: String
        var path: String
        var result: String
    }

    /// When the command started, seconds since the epoch.
    var startedAt: Double = 0
    var capacity: UInt64?
    var low: UInt64?
    var high: UInt64?
    var samples: [Sample] = []
    var purges: [Purge] = []
    var faults: [Fault] = []
    /// `purgefs usage --json` of the container's root, before the command and after it.
    var usageAtStart: JSONValue?
    var usageAtEnd: JSONValue?

    /// How often the figures are read while the command runs. A sample is
    /// kept when a figure changed since the last one kept (and the first
    /// and the last always): every 100 ms or at each change, whichever is rarer.
    public static let samplingMilliseconds: UInt64 = 100

    /// Milliseconds after the command started, for a time in seconds since the epoch (0 before it).
    func milliseconds(at time: Double) -> UInt64 {
        let elapsed = (time - startedAt) * 1000
        return elapsed > 0 && elapsed.isFinite ? UInt64(elapsed.rounded()) : 0
    }

    // MARK: JSON

    /// The report's fields for all this, after `RunSummary`'s own.
    var jsonFields: [(String, JSONValue)] {
        func optional(_ value: UInt64?) -> JSONValue { value.map { .integer($0) } ?? .null }
        return [
            ("started_at", .number(PurgeLogSeconds.text(startedAt))),
            ("sampling_ms", .integer(Self.samplingMilliseconds)),
            ("capacity", optional(capacity)),
            ("low", optional(low)),
            ("high", optional(high)),
            ("samples", .array(samples.map { sample in
                .object([
                    ("at_ms", .integer(sample.atMilliseconds)),
                    ("device_used", .integer(sample.deviceUsed)),
                    ("container_used", .integer(sample.containerUsed)),
                    ("purgeable", .integer(sample.purgeable)),
                    ("available", .integer(sample.available)),
                    ("enospc", .integer(sample.enospc)),
                ])
            })),
            ("purges", .array(purges.map {
                .object([("at_ms", .integer($0.atMilliseconds)), ("path", .string($0.path)), ("bytes", .integer($0.bytes)),
                         ("reason", .string($0.reason))])
            })),
            ("faults", .array(faults.map {
                .object([("at_ms", .integer($0.atMilliseconds)), ("rule", .integer($0.rule)), ("op", .string($0.operation)),
                         ("path", .string($0.path)), ("result", .string($0.result))])
            })),
            ("usage_start", usageAtStart ?? .null),
            ("usage_end", usageAtEnd ?? .null),
        ]
    }

    /// The fields' help, for `purgefs run --help`.
    public static let fieldHelp: [(String, String)] = [
        ("started_at", "when the command started, seconds since the epoch"),
        ("sampling_ms", "how often the figures were read while the command ran (100)"),
        ("capacity, low, high", "the device's capacity at the end, and the mount's low and high marks in bytes (null when not known)"),
        ("samples", "the figures over time: at_ms, device_used, container_used, purgeable, available, enospc (requests answered ENOSPC so far); read every 100 ms, kept when one of them changed (the first and the last always)"),
        ("purges", "each file purged: at_ms, path, bytes, reason (the purge log)"),
        ("faults", "each fault injected: at_ms, rule, op, path, result (purgefs log --faults)"),
        ("usage_start, usage_end", "purgefs usage --json of the container when the command started and when it ended"),
    ]
}

/// Seconds since the epoch with milliseconds, as the logs write them.
enum PurgeLogSeconds {
    static func text(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "0" }
        let milliseconds = UInt64((seconds * 1000).rounded())
        let fraction = String(milliseconds % 1000)
        return "\(milliseconds / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }
}

/// Reads the mount's space figures for `RunTimeline` from `run`'s loop:
/// at most every `RunTimeline.samplingMilliseconds`, never waiting for
/// anything but the attribute reads themselves.
final class RunSampler {
    let mountpoint: String
    private let access: AttributeAccess
    private(set) var timeline = RunTimeline()
    private var lastRead: UInt64?

    init(mountpoint: String, access: AttributeAccess = .live) {
        self.mountpoint = mountpoint
        self.access = access
    }

    /// The breakdown before the command starts.
    func start() {
        timeline.usageAtStart = usage()
    }

    /// Called by the loop with the milliseconds since the command started.
    func tick(now: UInt64) {
        if lastRead == nil { timeline.startedAt = WallClock.seconds() - Double(now) / 1000 }
        if let lastRead, now - lastRead < RunTimeline.samplingMilliseconds { return }
        lastRead = now
        guard let sample = read(at: now) else { return }
        if let last = timeline.samples.last, last.sameFigures(as: sample) { return }
        timeline.samples.append(sample)
    }

    /// Once the command has ended (the mount still there): the last
    /// sample, the logs since `since` (seconds since the epoch, before the
    /// mount), the marks and the breakdown at the end.
    func finish(now: UInt64, since: Double, session: RunSession) {
        if lastRead == nil { timeline.startedAt = WallClock.seconds() - Double(now) / 1000 }
        if let sample = read(at: now) { timeline.samples.append(sample) }
        timeline.usageAtEnd = usage()
        timeline.capacity = try? access.number(.capacity, of: mountpoint)
        if let mount = OwnMount.purgefsMount(at: mountpoint),
           let record = try? RuntimeRecordLocator.record(of: mount, at: mountpoint), let capacity = timeline.capacity {
            timeline.low = record.low?.bytes(ofCapacity: capacity)
            timeline.high = record.high?.bytes(ofCapacity: capacity)
        }
        if let (status, output) = try? session.purgefs(["log", mountpoint, "--json"]), status.exitCode == 0 {
            for entry in output.split(whereSeparator: \.isNewline).compactMap({ PurgeLogEntry(line: $0) }) where entry.time >= since {
                timeline.purges.append(.init(atMilliseconds: timeline.milliseconds(at: entry.time), path: entry.path,
                                             bytes: entry.bytes, reason: entry.reason))
            }
        }
        if let (status, output) = try? session.purgefs(["log", mountpoint, "--faults", "--json"]), status.exitCode == 0 {
            for line in output.split(whereSeparator: \.isNewline) {
                guard let object = JSONValue(parsing: String(line)), let time = object["time"]?.doubleValue, time >= since
                else { continue }
                timeline.faults.append(.init(atMilliseconds: timeline.milliseconds(at: time), rule: object["rule"]?.integerValue ?? 0,
                                             operation: object["op"]?.stringValue ?? "?", path: object["path"]?.stringValue ?? "",
                                             result: object["result"]?.stringValue ?? ""))
            }
        }
    }

    private func read(at now: UInt64) -> RunTimeline.Sample? {
        guard let deviceUsed = try? access.number(.deviceUsed, of: mountpoint),
              let containerUsed = try? access.number(.containerUsed, of: mountpoint),
              let purgeable = try? access.number(.purgeable, of: mountpoint),
              let available = try? access.number(.available, of: mountpoint),
              let enospc = try? access.number(.enospc, of: mountpoint)
        else { return nil }
        return .init(atMilliseconds: now, deviceUsed: deviceUsed, containerUsed: containerUsed, purgeable: purgeable,
                     available: available, enospc: enospc)
    }

    private func usage() -> JSONValue? {
        guard let location = try? MountLocation.find(mountpoint), let report = try? UsageReport.read(at: location, access)
        else { return nil }
        return report.json
    }
}
