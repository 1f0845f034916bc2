import Glibc
import PurgeCore
import PurgeSys

/// Breaking a linked clone: before a file that shares its data is modified
/// (written, truncated, allocated, hard-linked), it gets data of its own.
///
/// - A *member* gets a copy in its anchor, which is then renamed over its
///   name: the anchor is the member's identity, so nothing else changes.
///   Killed before the rename, the member still shares (the anchor's partial
///   copy is never read); after it, the next mount sees the anchor under the
///   name and forgets the member.
/// - The *primary* keeps its backing inode (its identity); its data is copied
///   to a new backing in the anchor directory, the registry is saved saying
///   so, and every member's name is moved over to it. Killed in between, the
///   next mount finishes the move (the data is the same: the primary is
///   written only once the break is done).
///
/// The copy asks for room first, like any write (purging, `ENOSPC` when
/// nothing purgeable is left); a break that fails leaves both files as they were.
extension LinkedClones {
    /// Gives `inode` data of its own if it shares any. `keepingData` false:
    /// it is about to be truncated to nothing, so nothing is copied.
    /// `whole`: a member gets all of its data (a flatten), never a block map.
    func breakAway(_ inode: Inode, keepingData: Bool, whole: Bool = false, breaking: CloneBreaking) throws(Errno) {
        guard inode.isRegularFile else { return }
        // A file left protected by a clone that was undone gets its writable
        // descriptor back below even when nothing is shared.
        if isActive || inode.sharing.isShared || sparse.isActive {
            try withDataLocks(of: [inode]) { () throws(Errno) in
                if sparse.has(inode.key) {
                    // Its writes copy the blocks they touch, through its view.
                    inode.sharing.unshare()
                    return
                }
                if isOrphan(inode) {
                    try breakOrphan(inode, keepingData: keepingData, room: breaking.room)
                    return
                }
                // Its backing file is about to change in place (all but a
                // sharing member's break, which copies): forgotten members
                // reading it get their own copies first.
                let member = isMember(inode.key), shares = sharesData(inode.key)
                if !(member && shares) { try breakOrphans(of: inode, room: breaking.room) }
                // A lone member shares yet with its primary's node, should the
                // kernel still know it (a primary purged behind its back).
                // (Breaking every member, alone or not, lost appends of
                // writers opening beside the break: PassthroughTests.)
                if !shares && !(member && breaking.inodes.existing(inode.backing) != nil) {
                    inode.sharing.unshare()
                } else if member {
                    try breakMember(inode, keepingData: keepingData, whole: whole, breaking: breaking)
                } else {
                    try breakPrimary(inode, breaking: breaking)
                }
            }
        }
        for file in inode.sharing.openFiles { try file.unprotect() }
    }

    // MARK: A member

    func breakMember(_ inode: Inode, keepingData: Bool, whole: Bool = false, breaking: CloneBreaking) throws(Errno) {
        guard let anchors else { throw Errno.ioError }
        let id = inode.key
        let size = UInt64(try inode.withDescriptor { (path) throws(Errno) in try path.status() }.st_size)
        // Made sparse, it copies now only the base's partial last block
        // (the write's blocks are asked for with the write, `bytesCopiedOnWrite`).
        let sparsely = keepingData && !whole && SparseMembers.makesSparse
        let reserved = keepingData ? try breaking.room.reserve(bytes: sparsely ? min(size, BlockMap.blockSize) : size) : 0
        defer { state.release(reserved) }
        guard guarded.withLock({ table in table.registry.members[id] }) != nil else { throw Errno.noEntry }
        let anchorName = LinkedCloneRegistry.anchorName(of: id)
        let anchor = try FileDescriptor.open(anchorName, in: anchors, flags: O_RDWR | O_NOFOLLOW)
        defer { anchor.closeQuietly() }
        guard EntryID(try anchor.status()) == id else { throw Errno(ESTALE) }
        var sparseFile: SparseMemberFile?
        if sparsely {
            sparseFile = try startSparse(id, anchor: anchor, inode: inode)
        } else if keepingData {
            try fill(anchor, from: inode)
        } else {
            try anchor.truncate(to: 0)
        }
        DebugSteps.reached("member-filled")
        do throws(Errno) {
            _ = try takeOver(id, with: anchorName, breaking: breaking)
            DebugSteps.reached("member-renamed")
        } catch {
            // Still a linked member: its map goes (a kill here: the mount's replay drops it).
            if sparseFile != nil {
                try? sparse.drop(id)
                try? anchor.truncate(to: 0)
            }
            throw error
        }
        guarded.withLock { table in release(id, in: &table) }
        inode.repoint(to: try anchor.reopen(flags: OpenFlags.path), backing: id)
        inode.sharing.unshare()
        reopenReaders(of: inode)
        let status = try anchor.status()
        if let base = sparseFile?.snapshot.map.base {
            chargeSparseMembers(of: base)
            return
        }
        do {
            try state.withLedger { (ledger, _) throws(PurgeCoreError) in
                try ledger.update(id, size: UInt64(status.st_size), allocated: ContainerState.allocated(status), cloneSavings: 0)
            }
        } catch {
            Diagnostics.note("accounting drifted from the backing store: \(error)")
        }
    }

    /// Renames the filled anchor over member `id`'s name, which may have moved
    /// or gone while the data was copied (the copy takes no namespace lock);
    /// with no name left the anchor's name goes. Returns the member as it was.
    private func takeOver(_ id: EntryID, with anchorName: String, breaking: CloneBreaking) throws(Errno) -> LinkedCloneRegistry.Member {
        guard let anchors else { throw Errno.ioError }
        while true {
            guard let member = guarded.withLock({ table in table.registry.members[id] }) else { throw Errno.noEntry }
            if member.name.isEmpty {
                try anchors.unlink(anchorName)
                return member
            }
            let done = try breaking.locks.withLocks(member.parent) { () throws(Errno) -> Bool in
                guard let backing = guarded.withLock({ table -> EntryID? in
                    guard table.registry.members[id] == member else { return nil }
                    return table.registry.groups[member.group]?.backing
                }) else { return false }
                guard let chain = state.read({ _, names in names.components(of: member.parent) }) else { throw Errno.noEntry }
                let directory = try DirectoryNames.open(chain, from: breaking.root)
                defer { directory.closeQuietly() }
                // Only a name that is still the member's (a link of its
                // group's data, or its anchor already) is replaced: one purged
                // before the registry forgot the member may hold a new file
                // by now, which the anchor replaced (another name then read
                // this member's bytes). With none, it keeps no name.
                let current = (try? directory.status(of: Self.cName(member.name))).map(EntryID.init)
                guard current == backing || current == id else {
                    try anchors.unlink(anchorName)
                    return true
                }
                try anchors.rename(anchorName, to: Self.cName(member.name), in: directory)
                return true
            }
            if done { return member }
        }
    }

    /// Copies the inode's data into `anchor`, keeping the anchor's times
    /// (the member's); on failure the anchor is emptied again.
    private func fill(_ anchor: FileDescriptor, from inode: Inode) throws(Errno) {
        let times = try anchor.status()
        let data = try inode.withDescriptor { (path) throws(Errno) in try path.reopen(flags: O_RDONLY) }
        defer { data.closeQuietly() }
        do throws(Errno) {
            try anchor.truncate(to: 0)
            try Self.copy(data, into: anchor)
            try anchor.setTimes(access: times.st_atim, modification: times.st_mtim)
        } catch {
            try? anchor.truncate(to: 0)
            throw error
        }
    }

    /// Copies all of `source` into the empty `destination`, in the kernel.
    static func copy(_ source: FileDescriptor, into destination: FileDescriptor) throws(Errno) {
        let size = Int64(try source.status().st_size)
        var offset: Int64 = 0
        while offset < size {
            let copied = try destination.copyRange(
                from: source, sourceOffset: offset, offset: offset, length: Int(min(size - offset, 1 << 30)))
            if copied == 0 { throw Errno.ioError }  // the source shrank under us
            offset += Int64(copied)
        }
    }

    /// Read-only open files of a re-pointed inode read its new backing file;
    /// protected ones get theirs from `unprotect` once the break is over.
    private func reopenReaders(of inode: Inode) {
        for file in inode.sharing.openFiles where !file.isWritable {
            if let readOnly = try? inode.withDescriptor({ (path) throws(Errno) in try path.reopen(flags: file.flags) }) {
                file.repoint(to: readOnly, protecting: false)
            }
        }
    }

    // MARK: A forgotten member

    /// A node that still reads a group's data though the registry forgot it
    /// (its clone was purged, or unlinked and closed, while the kernel kept
    /// the node: a cached name not yet invalidated, an `O_PATH` descriptor).
    /// Its data is another file's: never written in place.
    func isOrphan(_ inode: Inode) -> Bool {
        inode.isRegularFile && inode.backing != inode.key && !isMember(inode.key)
    }

    /// A member node the kernel knows: should the member be forgotten while
    /// the node lives, the node becomes an orphan to look after.
    func knowNode(_ inode: Inode) {
        guarded.withLock { table in
            if table.registry.members[inode.key] != nil { table.memberNodes[inode.key] = WeakInode(inode: inode) }
        }
    }

    /// Breaks every orphan still reading `inode`'s backing file (under that
    /// file's data lock, which the caller holds: an orphan's is the same).
    private func breakOrphans(of inode: Inode, room: any GrowthPolicy) throws(Errno) {
        let backing = inode.backing
        let orphans = guarded.withLock { table in
            (table.orphans.removeValue(forKey: backing) ?? []).compactMap(\.inode)
        }.filter { $0 !== inode && $0.backing == backing && isOrphan($0) }
        for (index, orphan) in orphans.enumerated() {
            do {
                try breakOrphan(orphan, keepingData: true, room: room)
            } catch {
                let left = orphans[index...].map { WeakInode(inode: $0) }
                guarded.withLock { table in table.orphans[backing, default: []] += left }
                throw error
            }
        }
    }

    /// Gives a forgotten member its data in its own inode (its anchor, held
    /// by the node though no longer named), as a member's break does but
    /// with no name to rename it over: the file is gone, so only the
    /// descriptors open on it see what is written.
    private func breakOrphan(_ inode: Inode, keepingData: Bool, room: any GrowthPolicy) throws(Errno) {
        guard let anchor = try inode.sharing.reopenHeldIdentity(flags: O_RDWR) else { throw Errno.ioError }
        defer { anchor.closeQuietly() }
        guard EntryID(try anchor.status()) == inode.key else { throw Errno(ESTALE) }
        if keepingData {
            let size = UInt64(try inode.withDescriptor { (path) throws(Errno) in try path.status() }.st_size)
            let reserved = try room.reserve(bytes: size)
            defer { state.release(reserved) }
            try fill(anchor, from: inode)
        } else {
            try anchor.truncate(to: 0)
        }
        inode.repoint(to: try anchor.reopen(flags: OpenFlags.path), backing: inode.key)
        inode.sharing.unshare()
        reopenReaders(of: inode)
    }

    // MARK: The primary

    private func breakPrimary(_ inode: Inode, breaking: CloneBreaking) throws(Errno) {
        guard let anchors else { throw Errno.ioError }
        let old = inode.key
        let group = guarded.withLock { table in table.registry.group(backedBy: old) }
        // A base of sparse members is copied too, and they are moved onto the copy.
        let isBase = sparse.isBase(old)
        guard group != nil || isBase else { return }
        let data = try inode.withDescriptor { (path) throws(Errno) in try path.reopen(flags: O_RDONLY) }
        defer { data.closeQuietly() }
        let status = try data.status()
        let reserved = try breaking.room.reserve(bytes: UInt64(status.st_size))
        defer { state.release(reserved) }

        // The new backing, whole and durable before the registry names it.
        let newName = Self.newBackingName(replacing: old)
        try? anchors.unlink(newName)
        let copy = try FileDescriptor.open(newName, in: anchors, flags: O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, mode: status.st_mode & 0o7777)
        defer { copy.closeQuietly() }
        do throws(Errno) {
            try Self.copy(data, into: copy)
            try copy.changeOwner(user: status.st_uid, group: status.st_gid)
            try copy.sync()
        } catch {
            try? anchors.unlink(newName)
            throw error
        }
        DebugSteps.reached("primary-copied")
        let backing = EntryID(try copy.status())
        let handle = try FileHandle(of: copy)
        if let group {
            guarded.withLock { table in
                table.registry.replaceBacking(of: group, with: backing, handle: handle.stored)
                save(&table)
            }
            DebugSteps.reached("primary-saved")
            try moveMembers(of: group, from: old, to: copy, breaking: breaking)
            DebugSteps.reached("primary-moved")
        }
        // Sparse members' maps name the copy (durably) before the primary is written.
        if isBase {
            try sparse.rebase(from: old, to: copy, lock: { (member, body) throws(Errno) in try dataLocks.withLock(member, body) })
        }
        // The members' names (and the copy's `b` link) hold the new data now (open members, their descriptors).
        try? anchors.unlink(newName)
        guarded.withLock { table in
            if let group {
                table.registry.retired(group)
                save(&table)
                settle(group, in: &table)
            }
            table.sharedBytes[old] = nil
        }
        if isBase { chargeSparseMembers(of: backing) }
        inode.sharing.unshare()
        do {
            try state.withLedger { (ledger, _) throws(PurgeCoreError) in
                guard ledger.contains(old) else { return }
                try ledger.update(old, size: UInt64(status.st_size), allocated: ContainerState.allocated(status), cloneSavings: 0)
            }
        } catch {
            Diagnostics.note("accounting drifted from the backing store: \(error)")
        }
    }

    /// The new backing's name in the anchor directory while a primary's
    /// break moves its members over to it (`old`: the primary's inode).
    static func newBackingName(replacing old: EntryID) -> String { "z\(old.inode)" }

    /// Links every member's name of `group` still on `old` to `backing`, and
    /// points their inodes and open files at it (read-only: they still share).
    func moveMembers(of group: UInt64, from old: EntryID, to backing: FileDescriptor, breaking: CloneBreaking) throws(Errno) {
        let backingID = EntryID(try backing.status())
        for id in guarded.withLock({ table in table.registry.members(of: group) }) {
            // A member renamed meanwhile is relinked under its new name (tried
            // again until its name holds still under its directory's lock).
            while let member = guarded.withLock({ table in table.registry.members[id] }), !member.name.isEmpty {
                let done = try breaking.locks.withLocks(member.parent) { () throws(Errno) -> Bool in
                    guard guarded.withLock({ table in table.registry.members[id] }) == member else { return false }
                    guard let chain = state.read({ _, names in names.components(of: member.parent) }) else { return true }
                    let directory = try DirectoryNames.open(chain, from: breaking.root)
                    defer { directory.closeQuietly() }
                    try Self.relink(Self.cName(member.name), in: directory, from: old, to: backing)
                    return true
                }
                if done { break }
            }
            // Its backing file is another now (the same content): the cloud tier uploads it again.
            defer { breaking.events.changed(id) }
            guard let inode = breaking.inodes.existing(id) else { continue }
            inode.repoint(to: try backing.reopen(flags: OpenFlags.path), backing: backingID)
            for file in inode.sharing.openFiles {
                if let readOnly = try? backing.reopen(flags: O_RDONLY) { file.repoint(to: readOnly, protecting: true) }
            }
        }
    }

    /// Makes `name` in `directory`, now a link of `old`, a link of `backing`:
    /// a temporary link renamed over it, so the name never goes missing.
    static func relink(_ name: [CChar], in directory: FileDescriptor, from old: EntryID, to backing: FileDescriptor) throws(Errno) {
        guard let status = try? directory.status(of: name), EntryID(status) == old else { return }
        let temporary = CloneLeftovers.prefix + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        try backing.link(as: temporary, in: directory)
        do throws(Errno) {
            try directory.rename(temporary, to: name, in: directory)
        } catch {
            try? directory.unlink(temporary)
            throw error
        }
    }
}
