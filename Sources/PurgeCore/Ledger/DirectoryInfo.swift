/// What the ledger knows about one directory.
public struct DirectoryInfo: Equatable, Sendable {
    public var totals: Totals
    public var isZoneRoot: Bool
    public var isInZone: Bool
    /// Pinned on the directory itself.
    public var isPinned: Bool
    /// Pinned on the directory or one above it.
    public var isProtectedByPin: Bool
    public var isGroup: Bool
    public var isTombstone: Bool
    /// The group root its files are purged with, if any.
    public var group: EntryID?
    /// For a group root: its age, the stamp of its most recently used file.
    public var lastUsed: UInt64
}
