/// How much a purge should free.
public enum PurgeGoal: Equatable, Sendable {
    /// At least this many allocated bytes (a write that does not fit, the
    /// monitor, `purge --bytes`).
    case bytes(UInt64)
    /// Every candidate (`purge --all`).
    case all
}

/// What to do to one victim.
public enum PurgeAction: Equatable, Sendable {
    /// Remove every name of the file.
    case delete
    /// Truncate it to zero bytes; its names stay (below a tombstone directory).
    case truncate
}

/// One file to purge.
public struct PurgeVictim: Equatable, Sendable {
    public var file: EntryID
    public var action: PurgeAction
    /// The directories holding its names, one entry per name. Names are not
    /// in the ledger: the adapter lists these directories and matches the
    /// inode number, then re-checks it with `fstatat(AT_SYMLINK_NOFOLLOW)`
    /// before it unlinks.
    public var directories: [EntryID]
    /// Allocated bytes the purge frees.
    public var bytes: UInt64
    public var size: UInt64
    /// The file's own stamp, for the log.
    public var lastUsed: UInt64
    /// The group it is purged with, if any.
    public var group: EntryID?
}

/// Victims in purge order: least recently used item first, a group's files
/// together. Pure data: the adapter executes it victim by victim, checks
/// `Ledger.canPurge` under its lock before each, reports each result back to
/// the ledger (`purged`, or the primitive changes for partial work), and
/// skips a victim it cannot purge. If the plan then falls short it asks for
/// a new one, `excluding` the failures.
public struct PurgePlan: Equatable, Sendable {
    public var goal: PurgeGoal
    public var victims: [PurgeVictim] = []
    /// Sum of the victims' `bytes`.
    public var plannedBytes: UInt64 = 0
    /// Items (files or groups) taken from the purge order; with the index's
    /// best-first walk this is what the plan cost, O(items × log items).
    public var examinedItems = 0

    /// Whether executing the whole plan meets the goal.
    public var meetsGoal: Bool {
        switch goal {
        case .all: return true
        case .bytes(let need): return plannedBytes >= need
        }
    }

    /// The victims grouped by the directories holding their names, in plan
    /// order of first appearance, so the adapter lists each directory once
    /// to find the names (a truncation needs one name to open the file, a
    /// deletion needs them all).
    public func filesByDirectory() -> [(directory: EntryID, files: [EntryID])] {
        var order: [EntryID] = []
        var byDirectory: [EntryID: [EntryID]] = [:]
        for victim in victims {
            for directory in victim.directories {
                if byDirectory[directory] == nil { order.append(directory) }
                byDirectory[directory, default: []].append(victim.file)
            }
        }
        return order.map { ($0, byDirectory[$0]!) }
    }
}
