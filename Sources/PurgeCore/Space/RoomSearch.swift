/// What a request for room gets from the device model.
public enum RoomAnswer: Equatable, Sendable {
    /// Reserved: given back once the write is in the ledger.
    case granted(UInt64)
    /// Purge this much first, then ask again.
    case purgeFirst(UInt64)
    /// Even purging everything would not make it fit.
    case noSpace
}

/// The purge → evict → `ENOSPC` loop every write-like change goes through
/// (the write path, a clone's break, a download): ask the device for room;
/// purge what it says first; when nothing is purgeable or the purge freed
/// nothing, let the observers evict (the cloud tier, with
/// `optimize_storage`); fail only when that frees nothing either. A bounded
/// number of rounds: each purges, or evicts one document.
public enum RoomSearch {
    public static let rounds = 64

    /// The amount reserved, or nil when there is no room (`ENOSPC`).
    /// `purge` and `evict` return the bytes they freed.
    public static func run(
        rounds: Int = rounds, ask: () -> RoomAnswer, purge: (UInt64) -> UInt64, evict: () -> UInt64
    ) -> UInt64? {
        for _ in 0..<rounds {
            switch ask() {
            case .granted(let amount):
                return amount
            case .noSpace:
                if evict() == 0 { return nil }
            case .purgeFirst(let bytes):
                if purge(bytes) == 0, evict() == 0 { return nil }
            }
        }
        return nil
    }
}
