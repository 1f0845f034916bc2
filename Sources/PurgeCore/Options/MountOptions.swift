/// Everything `-o` can say, typed and validated before anything is mounted.
///
/// Each option's name, help and parser live in its entry of
/// `MountOptionCatalog`; this file is the model that the adapter and the
/// command share.
public struct MountOptions: Equatable, Sendable {
    /// Simulated device size in bytes; `nil` means the backing filesystem is the device.
    public var capacity: UInt64?
    /// Simulated bytes used outside the container (other apps).
    public var external: UInt64 = 0
    /// Purge when available space drops below this.
    public var low: SpaceThreshold = .percent(10)
    /// Purge until available space is at least this.
    public var high: SpaceThreshold = .percent(20)
    /// Purgeable zones, relative to the container.
    public var purgeableZones: [String] = ["Library/Caches", "caches", "tmp"]
    /// Remote store for ubiquitous zones; `nil` means no cloud tier.
    public var cloud: CloudLocation?
    /// Ubiquitous zones, relative to the container.
    public var ubiquitousZones: [String] = ["Documents"]
    /// Where purgefs keeps its state; `nil` means `CONTAINER/.purgefs`.
    public var stateDirectory: String?
    /// The part of the container counted as the app itself.
    public var bundle: String?
    /// How often totals are sampled, in seconds.
    public var metricsIntervalSeconds: UInt64 = 3600
    /// Under pressure, also evict uploaded ubiquitous files.
    public var optimizeStorage = false
    /// The power-loss simulation (`purgefs crash`): what is not synced is
    /// tracked so a crash can undo it.
    public var crashable = false
    /// Where every operation that changes the container is recorded, with
    /// its data (`record=DIR`, for `purgefs explore`); `nil`: not recorded.
    public var record: String?
    /// A rules file loaded at mount (`FaultRuleFile`); `nil` for none.
    public var faults: String?
    /// The shared device this container joins (`device=NAME`); `nil`: a device of its own.
    public var device: String?
    /// How the shared device chooses victims; `nil`: the device's (`quota` for a new one).
    public var devicePolicy: DevicePolicy?
    /// This container's cache quota on a shared device; `nil`: derived from its recent use.
    public var cacheQuota: UInt64?
    /// The fields whose purgefs options were given explicitly, so that a
    /// later member of a shared device is checked only against what it
    /// said (`isGiven(\.capacity)`).
    public var given: Set<MountOptionField> = []
    /// Kernel passthrough for files opened read-only, where the kernel offers
    /// it and registers their backing files (`passthrough=off` turns it off).
    public var passthrough = true
    /// FUSE over io_uring, where the kernel offers it (`enable_uring`).
    public var uring = RingMode.pinned
    /// Standard FUSE and mount options (`allow_other`, `ro`, ...), passed to libfuse as given.
    public var fuseOptions: [String] = []

    public init() {}

    /// Whether the option that sets `field` was given.
    public func isGiven(_ field: PartialKeyPath<MountOptions>) -> Bool {
        given.contains(MountOptionField(field))
    }

    /// The name of the default state directory inside the container.
    public static let defaultStateDirectoryName = ".purgefs"
}

/// A space mark: an absolute byte count, or a share of the capacity.
public enum SpaceThreshold: Equatable, Sendable {
    case bytes(UInt64)
    case percent(Double)

    /// The mark in bytes for a device of `capacity` bytes.
    public func bytes(ofCapacity capacity: UInt64) -> UInt64 {
        switch self {
        case .bytes(let value): return value
        case .percent(let share):
            // At most the capacity, whatever the share (NaN and negative as 0): UInt64(_:) of a Double traps past 2^64.
            let value = (Double(capacity) * share / 100).rounded(.down)
            guard value > 0 else { return 0 }
            return value < Double(capacity) ? UInt64(value) : capacity
        }
    }
}

/// How requests come from the kernel (`uring=`): through `/dev/fuse`, or
/// through FUSE over io_uring where the kernel offers it, with each CPU's
/// ring threads pinned to that CPU (`pinned`, the default: a request never
/// wakes another CPU, so files, stats and reads go faster) or free to run
/// anywhere (`on`: a database's bulk load a tenth faster; BENCHMARKS, run P).
public enum RingMode: String, Equatable, Sendable {
    case off, on, pinned
}
