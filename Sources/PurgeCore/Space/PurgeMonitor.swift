/// The space monitor's hysteresis: it starts purging when available space
/// drops below the low mark and keeps going, round after round, until it is
/// back at the high mark, so it neither thrashes around one mark nor stops
/// halfway when a round frees less than planned.
public struct PurgeMonitor: Equatable, Sendable {
    /// Between crossing the low mark and reaching the high mark again.
    public private(set) var isPurging = false

    public init() {}

    /// How much to purge this round (0: nothing to do). Call it on every
    /// tick and after every change of capacity, external or usage. When the
    /// plan for it comes back empty nothing purgeable is left; the next
    /// tick simply asks again.
    public mutating func target(for status: SpaceStatus) -> UInt64 {
        if status.isBelowLow { isPurging = true }
        guard isPurging else { return 0 }
        let target = status.bytesToHigh
        if target == 0 { isPurging = false }
        return target
    }

    /// Stops the current episode, for instance when nothing purgeable is
    /// left; the next drop below the low mark starts a new one.
    public mutating func stop() { isPurging = false }
}
