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
    /// returned file holds `anchor` (a duplicate) until it is dropped.
    func startSparse(_ id: EntryID, anchor: FileDescriptor, inode: Inode) throws(Errno) -> SparseMemberFile {
        let base = try inode.withDescriptor { (path) throws(Errno) in try path.reopen(flags: O_RDONLY) }
        let times: stat
        let mine: FileDescriptor
        do throws(Errno) {
            times = try anchor.status()
            mine = try anchor.duplicate()
        } catch {
            base.closeQuietly()
            throw error
        }
        let baseID: EntryID
        let file: SparseMemberFile
        do throws(Errno) {
            baseID = EntryID(try base.status())
            try sparse.linkBase(base)
            file = try SparseMemberFile.start(
                member: id, anchor: mine, base: base, handle: try FileHandle(of: anchor).stored, maps: sparse.maps)
        } catch {
            try? anchor.truncate(to: 0)
            mine.closeQuietly()
            base.closeQuietly()
            throw error
        }
        sparse.started(file, base: baseID, descriptors: [mine, base])
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
    /// the bytes it reads from its base saved. Its base is charged to
    /// whoever names it (the original, a linked clone: their group's
    /// charges); a base nobody names any more (kept by its `b` link alone)
    /// is charged with its members (`chargeSparseMembers`). False when `id`
    /// is not sparse. Never under the clone lock (it asks whether a group
    /// names the base).
    func chargeSparse(_ id: EntryID, status: stat) -> Bool {
        guard let file = sparse.file(of: id), let shared = sparse.sharedBytes(of: id) else { return false }
        let base = file.snapshot.map.base
        if unnamedBaseAllocation(of: file) != nil {
            chargeSparseMembers(of: base)
            return true
        }
        record(id, status: status, allocated: ContainerState.allocated(status), saved: shared)
        return true
    }

    /// Charges every sparse member of `base` anew. A base nobody names is
    /// charged to the first of them (charging order), and what they save
    /// together is what they share less the base's blocks: each saves what
    /// it shares, the base's allocation taken from them in order.
    func chargeSparseMembers(of base: EntryID) {
        var unnamed: UInt64?
        var deficit: UInt64 = 0
        for (index, member) in state.chargingOrder(sparse.members(of: base), id: { $0 }).enumerated() {
            guard let file = sparse.file(of: member), let status = try? file.anchor.status(),
                  let shared = sparse.sharedBytes(of: member) else { continue }
            if index == 0 {
                unnamed = unnamedBaseAllocation(of: file)
                deficit = unnamed ?? 0
            }
            let taken = min(shared, deficit)
            deficit -= taken
            let bears = index == 0 ? unnamed ?? 0 : 0
            record(member, status: status, allocated: ContainerState.allocated(status) + bears, saved: shared - taken)
        }
    }

    /// The base's allocation when nothing but its `b` link names it (no
    /// original, no linked clone); nil when someone does.
    private func unnamedBaseAllocation(of file: SparseMemberFile) -> UInt64? {
        guard let status = try? file.base.status(), status.st_nlink <= 1, !isShared(backing: file.snapshot.map.base) else { return nil }
        return ContainerState.allocated(status)
    }

    private func record(_ id: EntryID, status: stat, allocated: UInt64, saved: UInt64) {
        do {
            try state.withLedger { (ledger, _) throws(PurgeCoreError) in
                guard ledger.contains(id) else { return }
                try ledger.update(id, size: UInt64(status.st_size), allocated: allocated, cloneSavings: saved)
            }
        } catch {
            Diagnostics.note("accounting drifted from the backing store: \(error)")
        }
    }

    /// A file of sparse member `id` was closed: what it wrote is committed
    /// (its anchor synced, then its records journaled); gone, its map is dropped.
    func sparseClosed(_ id: EntryID) {
        guard let file = sparse.file(of: id) else { return }
        if !sparse.maps.book.pendingRecords(of: id).isEmpty {
            do { try dataLocks.withLock(id) { () throws(Errno) in try file.sync() } } catch {
                Diagnostics.note("sparse clone \(id): cannot commit its map at close: \(error)")
            }
        }
        dropSparseIfGone(id)
    }

    /// A sparse member the ledger no longer has (unlinked and closed, or
    /// purged) has its map dropped, and its base's link when no map names it.
    func dropSparseIfGone(_ id: EntryID) {
        guard sparse.has(id), !state.read({ ledger, _ in ledger.contains(id) }) else { return }
        let base = sparse.file(of: id)?.snapshot.map.base
        do { try dataLocks.withLock(id) { () throws(Errno) in try sparse.drop(id) } } catch {
            Diagnostics.note("sparse clone \(id): cannot drop its map: \(error)")
        }
        if let base { chargeSparseMembers(of: base) }
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
    func flattenSparse(_ inode: Inode, filesystem fs: ContainerFileSystem) throws(Errno) {
        let id = inode.key
        let reserved = try fs.growthPolicy.reserve(bytes: sparse.sharedBytes(of: id) ?? 0)
        defer { state.release(reserved) }
        let base = sparse.file(of: id)?.snapshot.map.base
        defer { if let base { chargeSparseMembers(of: base) } }
        try dataLocks.withLock(id) { () throws(Errno) in
            guard let file = sparse.file(of: id) else { return }
            try file.flatten()
            sparse.flattened(id)
        }
        if let status = try? inode.withDescriptor({ (path) throws(Errno) in try path.status() }) {
            do {
                try state.withLedger { (ledger, _) throws(PurgeCoreError) in
                    guard ledger.contains(id) else { return }
                    try ledger.update(id, size: UInt64(status.st_size), allocated: ContainerState.allocated(status), cloneSavings: 0)
                }
            } catch {
                Diagnostics.note("accounting drifted from the backing store: \(error)")
            }
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
