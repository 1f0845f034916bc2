/// One directory in the ledger, with the recursive totals of its subtree.
///
/// Directories are few next to files, so this record carries whatever makes
/// queries O(1): the totals, the effective zone, pin, tombstone and group
/// settings inherited from above (recomputed for a subtree when a setting
/// changes or the directory moves), and child lists for walking the subtree.
struct DirectoryRecord {
    var id: EntryID
    var parent: UInt32
    /// First child directory, and this directory's neighbours among its
    /// parent's children.
    var firstChild: UInt32 = noSlot
    var nextSibling: UInt32 = noSlot
    var previousSibling: UInt32 = noSlot
    /// First file whose first name is here (see `FileRecord.next`).
    var firstFile: UInt32 = noSlot
    /// Names of files directly in this directory, hard links included.
    var fileLinks: UInt32 = 0
    var totals = Totals.zero
    /// For a group root: the stamp of its most recently used file (including
    /// files since deleted or moved out: the group's last use).
    var lastUsed: UInt64 = 0
    /// For a group root: members (files whose first name is in the group)
    /// with purge work. Not `totals.purgeableFiles`, which also counts a
    /// file whose other name lies in the group but whose first is elsewhere.
    var membersWithWork: UInt32 = 0
    /// Visit mark for walking the union of several ancestor chains once.
    var mark: UInt64 = 0
    /// The group root this directory belongs to (outermost group inside a
    /// zone, possibly itself), or `noSlot`.
    var group: UInt32 = noSlot
    var flags: Flags

    init(id: EntryID, parent: UInt32) {
        self.id = id
        self.parent = parent
        self.flags = .live
    }

    struct Flags: OptionSet {
        let rawValue: UInt16

        /// `contains` without the generic `SetAlgebra` path, which costs
        /// in unoptimised builds on the ledger's hottest lines.
        @inline(__always)
        func has(_ flag: Flags) -> Bool { rawValue & flag.rawValue == flag.rawValue }
        static let live = Flags(rawValue: 1 << 0)
        // Set on this directory itself.
        static let zoneRoot = Flags(rawValue: 1 << 1)
        static let pinned = Flags(rawValue: 1 << 2)
        static let group = Flags(rawValue: 1 << 3)
        static let tombstone = Flags(rawValue: 1 << 4)
        // Inherited: this directory or one above it has the setting.
        static let inZone = Flags(rawValue: 1 << 5)
        static let pinnedBelow = Flags(rawValue: 1 << 6)
        static let tombstoneBelow = Flags(rawValue: 1 << 7)

        static let own: Flags = [.zoneRoot, .pinned, .group, .tombstone]
        static let inherited: Flags = [.inZone, .pinnedBelow, .tombstoneBelow]
    }
}
