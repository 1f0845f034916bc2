/// Hands out recency stamps: strictly increasing, so the purge order is exact
/// even for uses within the same nanosecond.
///
/// With a wall-clock time source (nanoseconds since the epoch) a stamp is
/// also a time, good for `user.purgefs.last_used` (stamp / 1e9), and stamps
/// restored from an earlier mount, or derived from a file's mtime at mount,
/// sit in the same order as new ones. Without one (the default, used by the
/// tests) it is a plain counter.
public struct RecencyClock: Sendable {
    private let time: @Sendable () -> UInt64
    /// The last stamp handed out or observed.
    public private(set) var last: UInt64

    public init(last: UInt64 = 0, time: @escaping @Sendable () -> UInt64 = { 0 }) {
        self.last = last
        self.time = time
    }

    /// A stamp later than every stamp handed out or observed so far.
    public mutating func next() -> UInt64 {
        let now = time()
        precondition(last < .max, "purgefs: the recency clock ran out of stamps")
        last = max(last + 1, now)
        return last
    }

    /// Takes note of a stamp that came from elsewhere (a snapshot, an mtime),
    /// so later stamps stay above it.
    public mutating func observe(_ stamp: UInt64) {
        last = max(last, stamp)
    }
}
