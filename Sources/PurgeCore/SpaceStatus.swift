/// The space figures at one moment, and what they call for: the root's
/// `user.purgefs.*` space attributes, `statfs`, and how much to purge.
public struct SpaceStatus: Equatable, Sendable {
    /// C: the device size `statfs` reports.
    public var capacity: UInt64
    /// E: simulated use outside the container.
    public var external: UInt64
    /// U: the container's physical bytes.
    public var usage: UInt64
    /// A: free space, never below zero.
    public var available: UInt64
    /// Bytes purging could free.
    public var purgeable: UInt64
    public var lowMark: UInt64
    public var highMark: UInt64

    public init(capacity: UInt64, external: UInt64, usage: UInt64, available: UInt64,
                purgeable: UInt64, lowMark: UInt64, highMark: UInt64) {
        self.capacity = capacity
        self.external = external
        self.usage = usage
        self.available = available
        self.purgeable = purgeable
        self.lowMark = lowMark
        self.highMark = highMark
    }

    /// A + purgeable: what a write that matters can get, purging first
    /// (`volumeAvailableCapacityForImportantUsage`).
    public var availableImportant: UInt64 {
        let (sum, overflow) = available.addingReportingOverflow(purgeable)
        return overflow ? .max : sum
    }

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
