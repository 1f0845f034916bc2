/// The space figures at one moment, and what they call for: the root's
/// `user.purgefs.*` space attributes, `statfs` (so `df`), `purgefs space`
/// and `usage`, the metrics, and how much to purge.
///
/// Each figure is defined here once, under one name (the attribute's, the
/// JSON field's); docs/DESIGN.md "The figures" lists them:
/// - capacity C, external E, container used U, available A, free F;
/// - device used = C − F (what `df` shows as Used);
/// - available for important usage = A + purgeable;
/// - available for opportunistic usage = A − low mark, not below 0.
public struct SpaceStatus: Equatable, Sendable {
    /// C: the device's size (`statfs` `f_blocks`, df's Size).
    public var capacity: UInt64
    /// E: simulated use outside the container (other apps).
    public var external: UInt64
    /// U, container used: the container's physical bytes (clone-shared data
    /// once, evicted cloud files zero, files unlinked while still open
    /// included): `Ledger.usage`.
    public var containerUsed: UInt64
    /// A, available: what the container can still write, never below zero
    /// (`statfs` `f_bavail`, df's Avail). Simulated: C − E − U − writes in
    /// flight; real: the backing filesystem's available less E and writes
    /// in flight.
    public var available: UInt64
    /// F, free: A on a simulated device; on a real one the backing
    /// filesystem's free space (blocks reserved for root included) less E
    /// and writes in flight, at least A (`statfs` `f_bfree`).
    public var free: UInt64
    /// Bytes purging could free.
    public var purgeable: UInt64
    public var lowMark: UInt64
    public var highMark: UInt64

    public init(capacity: UInt64, external: UInt64, containerUsed: UInt64, available: UInt64, free: UInt64? = nil,
                purgeable: UInt64, lowMark: UInt64, highMark: UInt64) {
        self.capacity = capacity
        self.external = external
        self.containerUsed = containerUsed
        self.available = available
        self.free = max(free ?? available, available)
        self.purgeable = purgeable
        self.lowMark = lowMark
        self.highMark = highMark
    }

    /// Device used, C − F: everything in use on the device (E, U and writes
    /// in flight; on a real device also the backing filesystem's other
    /// files). What `df` shows as Used.
    public var deviceUsed: UInt64 { capacity.subtractingClamped(free) }

    /// The figures `statfs` gives, in blocks of `unit` bytes: size C rounded
    /// down, free F less device used (C − F) rounded up, so `df` never shows
    /// less in use than there is, and available A rounded down, never more
    /// than free. Whole-block arithmetic that cannot overflow, whatever the
    /// figures (a unit of 0 is taken as 1).
    public func blockFigures(unit: UInt64) -> (blocks: UInt64, free: UInt64, available: UInt64) {
        let unit = Swift.max(unit, 1)
        let blocks = capacity / unit
        let used = deviceUsed
        let usedBlocks = Swift.min(used / unit + (used % unit == 0 ? 0 : 1), blocks)
        let free = blocks - usedBlocks
        return (blocks, free, Swift.min(available / unit, free))
    }

    /// Takes `amount` in flight (reserved by writes under way) off what is
    /// available and free.
    public mutating func reserve(_ amount: UInt64) {
        available = available.subtractingClamped(amount)
        free = free.subtractingClamped(amount)
    }

    /// A + purgeable: what a write that matters can get, purging first
    /// (`volumeAvailableCapacityForImportantUsage`).
    public var availableImportant: UInt64 { available.addingClamped(purgeable) }

    /// A − low, not below 0: what a write that can wait should use without
    /// causing purges (`volumeAvailableCapacityForOpportunisticUsage`).
    public var availableOpportunistic: UInt64 { available.subtractingClamped(lowMark) }

    /// How much must be purged before a write needing `need` more bytes
    /// fits: 0 when it fits already. When this exceeds `purgeable`, purging
    /// cannot make room and the write gets `ENOSPC` without purging.
    public func bytesToFree(for need: UInt64) -> UInt64 { need.subtractingClamped(available) }

    /// Whether a write needing `need` more bytes can be made to fit by purging.
    public func canFit(_ need: UInt64) -> Bool { need <= availableImportant }

    /// Below the low mark: the monitor should start purging.
    public var isBelowLow: Bool { available < lowMark }

    /// How much the monitor should purge now to bring A up to the high mark
    /// (at least to the low mark, should the marks be set the wrong way
    /// round), whether or not A has dropped below the low mark.
    public var bytesToHigh: UInt64 { Swift.max(highMark, lowMark).subtractingClamped(available) }

    /// What a monitor seeing only this moment should purge: nothing while A
    /// is at least the low mark, else enough to reach the high mark. A
    /// monitor that purges in several rounds keeps its state in
    /// `PurgeMonitor`, so it carries on up to the high mark.
    public var monitorTarget: UInt64 { isBelowLow ? bytesToHigh : 0 }
}
