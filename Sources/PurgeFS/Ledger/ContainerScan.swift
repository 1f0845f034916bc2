import Glibc
import PurgeCore
import PurgeSys

/// Builds the ledger at mount from a walk of the backing container, as `du`
/// walks it: every directory and regular file, the zones, the stored
/// purgefs flags, and the recency of an earlier mount.
///
/// The walk does not enter the state directory, does not follow symlinks
/// and does not cross into another filesystem (a bind mount inside the
/// container is not the container's, and is never purged).
struct ContainerScan {
    let root: FileDescriptor
    let hidden: HiddenEntry?
    /// The purgeable zones that exist, by identity.
    let zones: Set<EntryID>
    let flags: StoredFlags
    let recency: RecencySnapshot?
    /// Clones sharing a backing inode, told apart by their names.
    var linkedClones = LinkedCloneRegistry()
    /// After `run`: the stored purge order had a stamp for every file found, and no other.
    private(set) var recencyIsCurrent = false
    /// After `run`: entries whose stored flags were set on an earlier inode
    /// with the same number (deleted while unmounted); not applied.
    private(set) var staleFlags: [EntryID] = []
    /// Called every `progressInterval` entries with the count so far.
    var progress: (Int) -> Void = { _ in }
    var progressInterval = 100_000
    /// Called for each temporary file of an interrupted `purgefs clone` (not counted).
    var foundCloneLeftover: (CName, EntryID) -> Void = { _, _ in }

    /// Walks the container; errors reading single directories are reported
    /// to the daemon log and the walk goes on.
    mutating func run(clock: RecencyClock) throws(Errno) -> (Ledger, DirectoryNames) {
        let rootStatus = try root.status()
        let rootID = EntryID(rootStatus)
        let now = WallClock.nanoseconds()
        var ledger = Ledger(clock: clock)
        var names = DirectoryNames(root: rootID)
        do {
            try ledger.addDirectory(rootID, parent: nil)
            try apply(flags.flags(of: rootID), to: rootID, in: &ledger)
        } catch {
            preconditionFailure("purgefs: an empty ledger refused the root: \(error)")
        }
        var count = 0
        try TreeWalk(root: root).run(visit: { visit in
            count += 1
            if count % progressInterval == 0 { progress(count) }
            let parent = EntryID(visit.parent)
            if let hidden, hidden.parent == parent, hidden.hides(visit.name) { return false }
            let id = identity(of: visit.status, name: visit.name, in: parent)
            do {
                switch visit.status.st_mode & S_IFMT {
                case S_IFDIR:
                    guard visit.status.st_dev == rootStatus.st_dev else { return false }
                    try ledger.addDirectory(id, parent: parent)
                    names.record(id, parent: parent, name: visit.name)
                    if zones.contains(id) { try ledger.setZone(id, true) }
                    try applyFlags(of: id, visit, to: &ledger)
                    return true
                case S_IFREG:
                    if CloneLeftovers.matches(visit.name) {
                        foundCloneLeftover(visit.name, parent)
                    } else if visit.status.st_nlink > 1 && ledger.contains(id) {
                        // (A file with one link cannot have been seen: no lookup for most files.)
                        try ledger.addLink(id, parent: parent)
                    } else {
                        try ledger.addFile(
                            id, parent: parent, size: UInt64(visit.status.st_size),
                            allocated: ContainerState.allocated(visit.status),
                            lastUsed: Self.stamp(fromTimesOf: visit.status, notAfter: now))
                        try applyFlags(of: id, visit, to: &ledger)
                    }
                default:
                    break
                }
            } catch {
                Diagnostics.note("indexing: \(error)")
            }
            return false
        }, failed: { directory, error in
            Diagnostics.note("indexing: cannot read directory \(EntryID(directory)): \(error)")
        })
        progress(count)
        // The stored order is current when it stamps exactly the files found.
        if let recency {
            let applied = ledger.restoreRecency(recency)
            recencyIsCurrent = applied == recency.records.count && applied == ledger.linkedFileCount
        }
        return (ledger, names)
    }

    /// A linked clone's identity is its anchor's; any other file's is its
    /// own (`LinkedCloneRegistry.identity`, as every path asks it).
    private func identity(of status: stat, name: CName, in parent: EntryID) -> EntryID {
        guard !linkedClones.isEmpty else { return EntryID(status) }  // no name copied per file
        return linkedClones.identity(
            of: EntryID(status), regularFile: status.st_mode & S_IFMT == S_IFREG,
            named: .init(parent: parent, name: CNames.bytes(name)))
    }

    /// The stored flags of the entry `visit` found, unless they were set on
    /// an earlier inode with its number (only an entry with flags costs a `statx`).
    private mutating func applyFlags(of id: EntryID, _ visit: TreeWalk.Visit, to ledger: inout Ledger) throws(PurgeCoreError) {
        let stored = flags.flags(of: id)
        guard !stored.isEmpty else { return }
        let born = StoredFlags.birthTime(of: id, holding: visit.status) { () throws(Errno) in
            try visit.directory.birthTime(of: visit.name)
        }
        guard flags.belong(to: id, born: born) else {
            staleFlags.append(id)
            return
        }
        try apply(stored, to: id, in: &ledger)
    }

    private func apply(_ stored: StoredFlags.Flags, to id: EntryID, in ledger: inout Ledger) throws(PurgeCoreError) {
        if stored.contains(.pinned) { try ledger.setPinned(id, true) }
        if stored.contains(.group) { try ledger.setGroup(id, true) }
        if stored.contains(.tombstone) { try ledger.setTombstone(id, true) }
    }

    /// A file never seen through the mount counts as last used when it was
    /// last modified or read, whichever is later.
    /// A time in the future (a skewed clock, `touch -d`, an unpacked
    /// archive) counts as `now`: it would put the file last in the purge
    /// order for good and carry the recency clock past the wall clock.
    static func stamp(fromTimesOf status: stat, notAfter now: UInt64) -> UInt64 {
        func nanoseconds(_ time: timespec) -> UInt64 {
            time.tv_sec < 0 ? 0 : UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
        }
        return min(max(nanoseconds(status.st_mtim), nanoseconds(status.st_atim)), now)
    }
}
