/// What the ledger knows about one regular file, for its `user.purgefs.*`
/// attributes and for the adapter's checks before it purges.
public struct FileInfo: Equatable, Sendable {
    public var size: UInt64
    public var allocated: UInt64
    public var cloneSavings: UInt64
    /// Recency stamp (nanoseconds since the epoch when the clock reads wall time).
    public var lastUsed: UInt64
    /// Names the ledger knows; 0 for an unlinked file still open.
    public var links: Int
    public var openCount: Int
    /// Pinned on the file itself.
    public var isPinned: Bool
    /// Pinned on the file or on a directory above one of its names.
    public var isProtectedByPin: Bool
    /// `user.purgefs.purgeable`: every name inside a purgeable zone.
    public var isInZone: Bool
    /// In a zone, not pinned, not open.
    public var isCandidate: Bool
    /// Purging truncates it rather than deleting it.
    public var isTombstoned: Bool
    /// The group directory it is purged with, if any.
    public var group: EntryID?
}
