import Glibc
import PurgeCore
import PurgeSys

/// Linked clones as the mount's clone backend: what it hears of the
/// handlers (a member's name follows renames and unlinks, the group is
/// charged anew; a file about to change gets data of its own first) and
/// what it answers (identities, presented attributes, the anchor).
extension LinkedClones: CloneBackend {
    var kind: CloneBackendKind { .linked }

    /// A base of sparse members, and a sparse member's own backing file
    /// (its holes are shared data), are not cut by a purge nor evicted.
    func sharesBacking(_ backing: EntryID) -> Bool { isShared(backing: backing) || sparse.isBase(backing) || sparse.has(backing) }

    /// Every name sharing a group's data (its primary counted when present),
    /// in groups where at least two do.
    var filesNotFlat: Int {
        guard isActive else { return sparse.count }
        return sparse.count + guarded.withLock { table in
            table.registry.groups.keys.reduce(0) { count, group in
                let sharing = table.sharers[group]?.count ?? 0
                return count + (sharing > 1 ? sharing : 0)
            }
        }
    }

    /// A member's break (its data copied into its anchor) or the primary's
    /// (the members moved to a copy), as a first write would make it.
    /// A sparse member's shared blocks are copied into it and its map dropped.
    func flatten(_ inode: Inode, breaking: CloneBreaking) throws(Errno) {
        guard inode.isRegularFile, sharesData(inode.key) else { return }
        if sparse.has(inode.key) {
            try flattenSparse(inode, breaking: breaking)
            return
        }
        try breakAway(inode, keepingData: true, whole: true, breaking: breaking)
    }

    /// A new node: a clone's anchor is held (its number is the node's
    /// identity, never to be reused while the node lives), and a node of
    /// shared data is marked shared (its writers hold read-only descriptors).
    /// A clone forgotten since its name was read (a purge between the
    /// lookup's identity and here) has no anchor left to hold: the node is
    /// refused, since its number could be a new file's the next moment, and
    /// that file would be handed this node, reading the clone's data.
    func adopted(_ inode: Inode, status: stat) -> Bool {
        if inode.key != EntryID(status) {
            // Held and known under the clone lock: a member forgotten after this is the node's to look after (an orphan).
            let anchor = guarded.withLock { (table) -> FileDescriptor? in
                guard table.registry.members[inode.key] != nil,
                      let anchor = try? withAnchor(inode.key, { (file) throws(Errno) in try file.duplicate() })
                else { return nil }
                table.memberNodes[inode.key] = WeakInode(inode: inode)
                return anchor
            }
            guard let anchor else { return false }
            inode.sharing.holdIdentity(anchor)
        }
        // A sparse member's writes go through its view, not through a break.
        if sparse.has(inode.key) {
            sparse.knowNode(inode)
        } else if sharesData(inode.key) {
            _ = inode.sharing.share()
        }
        return true
    }

    func attributeHolder(of id: EntryID) throws(Errno) -> FileDescriptor? {
        guard isMember(id) else { return nil }
        return try openAnchor(id)
    }

    /// In every zone: the cloud tier uploads each name's content under its
    /// path and evicts a member by giving it an empty file of its own.
    func clone(_ source: OpenFile, into destination: OpenFile, making: CloneMaking) -> Bool {
        makeClone(of: source, into: destination, making: making)
    }

    /// A whole break asks for its own room (`breakAway`); a write into a
    /// sparse member, or one that makes a member sparse, may copy the blocks
    /// it touches: its length rounded out to blocks, at most what is shared.
    func bytesCopiedOnWrite(of id: EntryID, length: Int) -> UInt64 {
        let shared: UInt64
        if let bytes = sparse.sharedBytes(of: id) {
            shared = bytes
        } else if SparseMembers.makesSparse, isMember(id), sharesData(id) {
            shared = UInt64.max
        } else {
            return 0
        }
        let block = BlockMap.blockSize
        return min(shared, (UInt64(length) + block - 1) / block * block + block)
    }

    func charges(_ id: EntryID) -> Bool { isMember(id) || sparse.has(id) }

    func contentID(of id: EntryID) -> UInt64 { groupContent(of: id) ?? id.inode }

    func sharedBytes(of id: EntryID) -> UInt64 { sparse.sharedBytes(of: id) ?? shared(of: id) ?? 0 }

    func settleAtMount(root: FileDescriptor) { reconcile(root: root) }

    func sparseFile(of id: EntryID) -> SparseMemberFile? { sparse.file(of: id) }

    func isSparse(_ id: EntryID) -> Bool { sparse.has(id) }

    func withSparseFile<T>(of inode: Inode, _ body: (SparseMemberFile) throws(Errno) -> T) throws(Errno) -> T? {
        guard sparse.has(inode.key) else { return nil }
        return try withDataLocks(of: [inode]) { () throws(Errno) -> T? in
            guard let file = sparse.file(of: inode.key) else {
                // Sparse still, its file not opened: never a change to its anchor alone (the map would not know it).
                if sparse.has(inode.key) { throw Errno.ioError }
                return nil
            }
            return try body(file)
        }
    }

    func sessionEnded() { sparse.commitAll(lock: { (id, body) throws(Errno) in try dataLocks.withLock(id, body) }) }

    // MARK: Events

    /// A file that shares its data gets data of its own before it changes;
    /// protected open files get their writable descriptors back.
    func beforeModify(_ inode: Inode, _ change: Modification, breaking: CloneBreaking) throws(Errno) {
        switch change {
        case .data(let file):
            if inode.sharing.mustBreak(before: file.handle) { try breakAway(inode, keepingData: true, breaking: breaking) }
        case .truncate(let keepingData):
            if inode.sharing.isShared { try breakAway(inode, keepingData: keepingData, breaking: breaking) }
        case .openTruncating:
            if sparse.has(inode.key) {
                try truncateSparseToNothing(inode)
                return
            }
            try breakAway(inode, keepingData: false, breaking: breaking)
        case .link:
            // A clone's names are its own: one more name needs data of its own.
            if inode.isRegularFile && isMember(inode.key) { try breakAway(inode, keepingData: true, breaking: breaking) }
        }
    }

    func removed(_ status: stat, id: EntryID, name: CName, from parent: EntryID) {
        guard status.st_mode & S_IFMT == S_IFREG else { return }
        removed(id, backing: EntryID(status))
    }

    func moved(_ status: stat, id: EntryID, name: CName, from parent: EntryID, newName: CName, to newParent: EntryID) {
        guard status.st_mode & S_IFMT == S_IFREG else { return }
        moved(id, backing: EntryID(status), to: .init(parent: newParent, name: Self.bytes(newName)))
    }

    /// A member's rename is recorded as under way before rename(2), so that a
    /// daemon killed before `moved` leaves no name of the group's data that
    /// the registry does not know (`LinkedCloneRegistry.beginMove`).
    func beforeMove(_ status: stat, id: EntryID, name: CName, from parent: EntryID, newName: CName, to newParent: EntryID) {
        guard isActive, status.st_mode & S_IFMT == S_IFREG else { return }
        guarded.withLock { table in
            guard table.registry.members[id] != nil else { return }
            table.registry.beginMove(id, to: .init(parent: newParent, name: Self.bytes(newName)))
            save(&table)
        }
    }

    func moveAbandoned(_ status: stat, id: EntryID, name: CName, from parent: EntryID) {
        guard isActive, status.st_mode & S_IFMT == S_IFREG else { return }
        guarded.withLock { table in
            guard table.registry.moving[id] != nil else { return }
            table.registry.endMove(id)
            save(&table)
        }
    }

    /// The replaced side first, then the moving one (as the ledger hears them).
    func exchanged(_ exchange: Exchange) {
        moved(exchange.replaced, id: exchange.replacedID, name: exchange.newName, from: exchange.newParent,
              newName: exchange.name, to: exchange.parent)
        moved(exchange.moving, id: exchange.movingID, name: exchange.name, from: exchange.parent,
              newName: exchange.newName, to: exchange.newParent)
    }

    /// A file `create` made and holds open: the name a clone into it takes.
    func created(_ status: stat, id: EntryID, name: CName, in parent: EntryID, opened: Bool) {
        guard opened, makesClones, status.st_mode & S_IFMT == S_IFREG else { return }
        createdNames.note(id, as: LinkedCloneRegistry.Name(parent: parent, name: Self.bytes(name)))
    }

    /// Setting the original's times through the mount (`setattr`, inside
    /// this bracket) changes its base's stamp: the stamp before, kept until
    /// `endOpen` stamps the members anew. An open is bracketed too, and
    /// changes nothing.
    func beginOpen(_ inode: Inode) throws(Errno) {
        guard inode.isRegularFile, let before = sparse.touching(inode.key, status: { baseStatus(inode) }) else { return }
        touches.withLock { $0[inode.key, default: []].append(before) }
    }

    func endOpen(_ inode: Inode) {
        guard inode.isRegularFile, sparse.isActive,
              let before = touches.withLock({ table -> BaseStamp? in
                  guard let before = table[inode.key]?.popLast() else { return nil }
                  if table[inode.key]?.isEmpty == true { table[inode.key] = nil }
                  return before
              }),
              let after = baseStatus(inode).map(BaseStamp.init) else { return }
        sparse.touched(inode.key, before: before, after: after, lock: { (id, body) throws(Errno) in try dataLocks.withLock(id, body) })
    }

    private func baseStatus(_ inode: Inode) -> stat? {
        try? inode.withDescriptor { (path) throws(Errno) in try path.status() }
    }

    func closed(_ id: EntryID) {
        createdNames.forget(id)
        sparseClosed(id)
        forgetIfGone(id)
    }

    func openAbandoned(_ id: EntryID) {
        createdNames.forget(id)
        sparseClosed(id)
        forgetIfGone(id)
    }

    /// A file in a group is charged with its group, a sparse member its own
    /// blocks (saving what it shares); any other's figures are recorded as they are.
    func resized(_ status: stat, id: EntryID) {
        guard status.st_mode & S_IFMT == S_IFREG else { return }
        if chargeSparse(id, status: status) { return }
        // An original its sparse clones share, in no group: charged with them.
        if sparse.isBase(id), !isShared(backing: id) {
            chargeSparseMembers(of: id)
            return
        }
        if !changed(id) { state.noteResized(status, id: id) }
    }
}
