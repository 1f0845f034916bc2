/// The device the container lives on, real or simulated, and the marks
/// that drive purging (SPEC "Space").
///
/// Pure arithmetic over snapshots: the adapter passes in the ledger's usage
/// and purgeable bytes and, for a real device, a `statvfs` of the backing
/// filesystem; the model never reads anything itself.
public struct CapacityModel: Equatable, Sendable {
    /// Simulated device size; `nil` means the backing filesystem is the device.
    public var capacity: UInt64?
    /// Simulated bytes used outside the container (other apps). On a real
    /// device it is taken from the backing filesystem's available space
    /// too, so a real device can be squeezed as well.
    public var external: UInt64
    /// Purge when available space drops below this.
    public var low: SpaceThreshold
    /// Purge until available space is at least this.
    public var high: SpaceThreshold
    /// On a shared simulated device: what the other containers use, and
    /// what of it purging could free (their records' `used`, `purgeable`).
    /// Always 0 on a device of one's own.
    public var neighbours: UInt64 = 0
    public var neighbourPurgeable: UInt64 = 0

    public init(capacity: UInt64? = nil, external: UInt64 = 0,
                low: SpaceThreshold = .percent(10), high: SpaceThreshold = .percent(20)) {
        self.capacity = capacity
        self.external = external
        self.low = low
        self.high = high
    }

    public init(options: MountOptions) {
        self.init(capacity: options.capacity, external: options.external, low: options.low, high: options.high)
    }

    /// Whether the device is simulated (and so needs no backing snapshot).
    public var isSimulated: Bool { capacity != nil }

    /// The space figures at this moment.
    /// - Parameters:
    ///   - usage: the container's physical bytes, `Ledger.usage`.
    ///   - purgeable: bytes purging could free, the root's `purgeable`.
    ///   - backing: the backing filesystem's size and available space;
    ///     required on a real device, ignored on a simulated one.
    public func status(usage: UInt64, purgeable: UInt64, backing: BackingSpace? = nil) -> SpaceStatus {
        let size: UInt64
        let available: UInt64
        let free: UInt64
        if let capacity {
            size = capacity
            available = capacity.subtractingClamped(external).subtractingClamped(neighbours).subtractingClamped(usage)
            free = available
        } else {
            guard let backing else {
                preconditionFailure("purgefs: a real device needs a snapshot of the backing filesystem")
            }
            size = backing.size
            available = backing.available.subtractingClamped(external)
            free = backing.free.subtractingClamped(external)
        }
        return SpaceStatus(
            capacity: size,
            external: external,
            containerUsed: usage,
            available: available,
            free: free,
            purgeable: purgeable.addingClamped(neighbourPurgeable),
            lowMark: low.bytes(ofCapacity: size),
            highMark: high.bytes(ofCapacity: size))
    }
}

/// The backing filesystem's space, from `statvfs`: size `f_blocks × f_frsize`,
/// available `f_bavail × f_frsize`, free `f_bfree × f_frsize` (blocks
/// reserved for root included).
public struct BackingSpace: Equatable, Sendable {
    public var size: UInt64
    public var available: UInt64
    public var free: UInt64

    public init(size: UInt64, available: UInt64, free: UInt64? = nil) {
        self.size = size
        self.available = available
        self.free = free ?? available
    }
}
