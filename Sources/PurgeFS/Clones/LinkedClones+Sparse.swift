import Glibc
import PurgeCore
import PurgeSys

/// Linked clones that share blocks (docs/DESIGN.md, "Block sharing without
/// reflinks"): a member made sparse at its first write, its charges, its
/// close, flattening and leaving, and the replay at mount. Each change of a
/// sparse member's data holds its data lock (keyed by its anchor's
/// identity, which is its backing file's).
extension LinkedClones {
    /// Makes member `id` sparse on the data `inode` shares (its group's
    /// backing): the base linked, the anchor sized as the base with its
    /// partial last block copied, the `start` record durable (the anchor
    /// synced first). The caller then renames the anchor over the name. The
    /// returned file holds `anchor` (a duplicate) until it goes.
    func startSparse(_ id: EntryID, anchor: FileDescriptor, inode: Inode) throws(Errno) -> SparseMemberFile {
        let base = try inode.withDescriptor { (path) throws(Errno) in try path.reopen(flags: O_RDONLY) }
        let times: stat
        let mine: FileDescriptor
        let baseID: EntryID
        let handle: (Int32, [UInt8])
        do throws(Errno) {
            times = try anchor.status()
            baseID = EntryID(try base.status())
            handle = try FileHandle(of: anchor).stored
            try sparse.linkBase(base)
            mine = try anchor.duplicate()
        } catch {
            try? anchor.truncate(to: 0)
            base.closeQuietly()
            throw error
        }
        let file: SparseMemberFile
        do throws(Errno) {
            // It takes `mine` and `base` (closing them if it throws).
            file = try SparseMemberFile.start(member: id, anchor: mine, base: base, handle: handle, maps: sparse.maps)
        } catch {
            try? anchor.truncate(to: 0)
            throw error
        }
        sparse.started(file, base: baseID)
        sparse.knowNode(inode)
        do throws(Errno) {
            try anchor.setTimes(access: times.st_atim, modification: times.st_mtim)
            try file.sync()
        } catch {
            try? sparse.drop(id)
            try? anchor.truncate(to: 0)
            throw error
        }
        return file
    }

    /// Records `id`'s figures when it is sparse: its own blocks allocated,
    /// the bytes it reads from its base saved; while no linked group
    /// shares the base, with the base's other sharers
    /// (`chargeSparseMembers`). False when `id` is not sparse. Never under
    /// the clone lock (it asks whether a group shares the base).
    func chargeSparse(_ id: EntryID, status: stat) -> Bool {
        guard let file = sparse.file(of: id), let shared = sparse.sharedBytes(of: id) else { return false }
        let base = file.snapshot.map.base
        guard isShared(backing: base) else {
            chargeSparseMembers(of: base)
            return true
        }
        record(id, size: UInt64(status.st_size), allocated: ContainerState.allocated(status), saved: shared)
        return true
    }

    /// Charges the sharers of `base` anew. While a linked group shares it,
    /// the group's charges count the base (`settle`) and each sparse member
    /// is charged its own blocks. Otherwise the base's blocks go to the
    /// first in charging order (names purging cannot reach first) of its
    /// original, while named, and its sparse members: a member bearing them
    /// has them taken from what the members save, in order; an original
    /// that does not bear them saves them.
    func chargeSparseMembers(of base: EntryID) {
        // Members kept for their node only are in no ledger: charged nothing.
        let members = sparse.members(of: base).filter { !sparse.isKept($0) }
        // A loop, not `lazy.compactMap(...).first`: a lazy collection asks its
        // closure again when it reads the element it found, and a member
        // dropped in between made that second answer nil, which it unwraps
        // (the daemon died of it under ConcurrencyTests' load in CI).
        var opened: SparseMemberFile?
        for member in members {
            opened = sparse.file(of: member)
            if opened != nil { break }
        }
        guard let any = opened, let baseStatus = try? any.base.status() else { return }
        let grouped = isShared(backing: base)
        // Named: a name in the container besides the base's own link.
        let named = !grouped && baseStatus.st_nlink > 1 && state.read { ledger, _ in ledger.contains(base) }
        let baseAllocated = grouped ? 0 : ContainerState.allocated(baseStatus)
        let order = state.chargingOrder((named ? [base] : []) + members, id: { $0 })
        var deficit = order.first == base ? 0 : baseAllocated
        for (index, id) in order.enumerated() {
            let bears = index == 0 ? baseAllocated : 0
            if id == base {
                record(id, size: UInt64(baseStatus.st_size), allocated: bears, saved: baseAllocated - bears)
                continue
            }
            guard let file = sparse.file(of: id), let status = try? file.anchor.status(),
                  let shared = sparse.sharedBytes(of: id) else { continue }
            let taken = min(shared, deficit)
            deficit -= taken
            record(id, size: UInt64(status.st_size), allocated: ContainerState.allocated(status) + bears, saved: shared - taken)
        }
    }

    private func record(_ id: EntryID, size: UInt64, allocated: UInt64, saved: UInt64) {
        do {
            try state.withLedger { (ledger, _) throws(PurgeCoreError) in
                guard ledger.contains(id) else { return }
                try ledger.update(id, size: size, allocated: allocated, cloneSavings: saved)
            }
        } catch {
            Diagnostics.note("accounting drifted from the backing store: \(error)")
        }
    }

    /// A file of sparse member `id` was closed: what it wrote is committed
    /// (its anchor synced, then its records journaled); gone, its map is dropped.
    /// The file is asked for under the lock: another close may have dropped it.
    func sparseClosed(_ id: EntryID) {
        guard sparse.has(id) else { return }
        if !sparse.maps.book.pendingRecords(of: id).isEmpty {
            do { try dataLocks.withLock(id) { () throws(Errno) in try sparse.file(of: id)?.sync() } } catch {
                Diagnostics.note("sparse clone \(id): cannot commit its map at close: \(error)")
            }
        }
        dropSparseIfGone(id)
    }

    /// A sparse member the ledger no longer has (unlinked and closed, or
    /// purged) has its map dropped, and its base's link when no map names it.
    /// Purged (`keepingForItsNode`) while the kernel still knows its node (a
    /// name looked up just before the purge), it is kept until the node is
    /// forgotten, so the node reads its bytes through the map, as a purged
    /// linked clone's node reads its group's data; each later call drops
    /// the kept members whose node went. Its file stays open meanwhile, so
    /// its anchor's inode number is not reused.
    func dropSparseIfGone(_ id: EntryID, keepingForItsNode: Bool = false) {
        // One sweep, not one per member swept (two of them swept each other without end).
        for kept in sparse.keptWithoutNode() where kept != id { dropGoneSparse(kept, keepingForItsNode: false) }
        dropGoneSparse(id, keepingForItsNode: keepingForItsNode)
    }

    private func dropGoneSparse(_ id: EntryID, keepingForItsNode: Bool) {
        guard sparse.has(id), isGone(id) else { return }
        if keepingForItsNode || sparse.isKept(id), sparse.isNodeKnown(id), sparse.file(of: id) != nil {
            sparse.keep(id)
            return
        }
        let base = sparse.file(of: id)?.snapshot.map.base
        do { try dataLocks.withLock(id) { () throws(Errno) in try sparse.drop(id) } } catch {
            Diagnostics.note("sparse clone \(id): cannot drop its map: \(error)")
        }
        if let base { chargeSparseMembers(of: base) }
    }

    /// Whether sparse member `id` has no name left: its anchor (its only
    /// file) has no link. Asked of the file, not of the ledger: a member
    /// whose ledger entry had drifted away was dropped while still named,
    /// and then read its anchor's holes where it shared. The ledger answers
    /// only when the anchor cannot be opened.
    private func isGone(_ id: EntryID) -> Bool {
        if let file = sparse.file(of: id), let status = try? file.anchor.status() { return status.st_nlink == 0 }
        return !state.read({ ledger, _ in ledger.contains(id) })
    }

    /// An `O_TRUNC` open of a sparse member: it is cut to nothing through
    /// its view (the map durably sharing nothing, then the anchor
    /// truncated), and the map dropped; the open's own truncation then
    /// finds nothing to cut.
    func truncateSparseToNothing(_ inode: Inode) throws(Errno) {
        let id = inode.key
        try dataLocks.withLock(id) { () throws(Errno) in
            guard let file = sparse.file(of: id) else { return }
            try file.truncate(to: 0)
            try sparse.drop(id)
        }
    }

    /// `flatten` of a sparse member: room for what it shares, then every
    /// shared block copied, the anchor synced, the map dropped (durably),
    /// the base's link dropped when no map names it.
    func flattenSparse(_ inode: Inode, breaking: CloneBreaking) throws(Errno) {
        let id = inode.key
        let reserved = try breaking.room.reserve(bytes: sparse.sharedBytes(of: id) ?? 0)
        defer { state.release(reserved) }
        let base = sparse.file(of: id)?.snapshot.map.base
        defer { if let base { chargeSparseMembers(of: base) } }
        try dataLocks.withLock(id) { () throws(Errno) in
            guard let file = sparse.file(of: id) else { return }
            try file.flatten()
            sparse.flattened(id)
        }
        if let status = try? inode.withDescriptor({ (path) throws(Errno) in try path.status() }) {
            record(id, size: UInt64(status.st_size), allocated: ContainerState.allocated(status), saved: 0)
        }
    }

    /// At mount, before the registry is reconciled: the durable maps
    /// replayed against the files, and sparse members charged. What the
    /// check still finds (synced bytes lost, a base missing) is logged
    /// and written to the state directory's `block-share-check`.
    func replaySparse(linkedMembers: Set<EntryID>) {
        let findings = sparse.replay(linkedMembers: linkedMembers)
        for finding in findings { Diagnostics.note("block sharing: \(finding)") }
        let report = findings.map { "\($0)\n" }.joined()
        try? directory.replace(Self.checkFileName, with: Array(report.utf8))
    }

    /// At mount, once the registry is settled: every sparse member charged.
    func chargeSparseAtMount() {
        let bases = Set(sparse.maps.book.durable.values.map(\.map.base))
        for base in bases { chargeSparseMembers(of: base) }
    }

    /// What the check found at the last mount (empty: nothing).
    static let checkFileName = "block-share-check"
}
