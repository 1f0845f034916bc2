/// Sentinel for "no slot" in the ledger's parent and sibling links.
let noSlot = UInt32.max

/// One regular file in the ledger: 56 bytes, flat in an array, so a million
/// files cost about 56 MB here plus their share of the identity dictionary
/// and the recency index.
///
/// Only what every file needs lives here. What few files need is kept in
/// side tables keyed by slot: extra hard links, open counts, clone savings.
/// Names are not stored: the adapter finds a victim's name by its inode
/// number in the directories the plan lists.
struct FileRecord {
    var id: EntryID
    var size: UInt64
    var allocated: UInt64
    var lastUsed: UInt64
    /// The directory of the file's first name; `noSlot` once the file has no
    /// name left (unlinked but still open).
    var parent: UInt32
    /// Neighbours in the parent's list of files, for walking a subtree.
    var next: UInt32
    var previous: UInt32
    var flags: Flags

    struct Flags: OptionSet {
        let rawValue: UInt8

        /// `contains` without the generic `SetAlgebra` path, which costs
        /// in unoptimised builds on the ledger's hottest lines.
        @inline(__always)
        func has(_ flag: Flags) -> Bool { rawValue & flag.rawValue == flag.rawValue }
        /// The slot holds a file (free slots are reused).
        static let live = Flags(rawValue: 1 << 0)
        /// `user.purgefs.pinned` on the file itself.
        static let pinned = Flags(rawValue: 1 << 1)
        /// Open at least once (the count is in the ledger's `openCounts`).
        static let open = Flags(rawValue: 1 << 2)
        /// More names than the first (they are in the ledger's `extraLinks`).
        static let extraLinks = Flags(rawValue: 1 << 3)
        /// Shares data with clones (the savings are in the ledger's `cloneSavings`).
        static let cloned = Flags(rawValue: 1 << 4)
        /// Its stamp changed since the adapter last took the changes (`takeRecencyChanges`).
        static let recencyChanged = Flags(rawValue: 1 << 5)
    }

    var isLinked: Bool { parent != noSlot }
}
