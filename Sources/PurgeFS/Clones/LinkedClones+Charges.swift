import Glibc
import PurgeCore
import PurgeSys

/// The charges that count each group's shared data once, and members
/// leaving their groups. Called with `lock` held.
extension LinkedClones {
    /// Charges a group: the first sharer (the primary when present) is charged
    /// the data, the others are charged nothing and save it. A group whose
    /// backing is gone, or that no member is left in, is forgotten.
    func settle(_ group: UInt64, in table: inout Table) {
        guard let record = table.registry.groups[group] else {
            table.sharers[group] = nil
            return
        }
        let members = table.registry.members(of: group)
        guard let status = try? backingStatus(record) else {
            Diagnostics.note("linked clone group \(group): its backing file is gone; its members are forgotten")
            for id in members { forget(id, in: &table) }
            return
        }
        // The base's own link (`b<ino>`, while block maps name it) is no name of the primary.
        let links = Int(status.st_nlink) - (sparse.isBase(record.backing) ? 1 : 0)
        let primary = links > table.registry.namedMembers(of: group) && !record.isRetiring
        let sharing = state.chargingOrder((primary ? [record.backing] : []) + members) { $0 }
        table.sharers[group] = sharing
        let allocated = ContainerState.allocated(status)
        for (index, id) in sharing.enumerated() {
            table.sharedBytes[id] = sharing.count == 1 ? nil : allocated
            let charged = index == 0 ? allocated : 0
            do {
                try state.withLedger { (ledger, _) throws(PurgeCoreError) in
                    guard ledger.contains(id) else { return }
                    try ledger.update(id, size: UInt64(status.st_size), allocated: charged, cloneSavings: allocated - charged)
                }
            } catch {
                Diagnostics.note("accounting drifted from the backing store: \(error)")
            }
        }
    }

    /// Forgets member `id` and removes its anchor; its group is settled again.
    func forget(_ id: EntryID, in table: inout Table) {
        guard table.registry.members[id] != nil else { return }
        // A node the kernel still knows keeps reading the group's data (see `isOrphan`).
        if let node = table.memberNodes[id]?.inode, node.backing != node.key {
            var known = (table.orphans[node.backing] ?? []).filter { $0.inode != nil }
            known.append(WeakInode(inode: node))
            table.orphans[node.backing] = known
        }
        removeAnchor(of: id)
        release(id, in: &table)
    }

    /// Takes member `id` out of its group (it has data of its own now, or is
    /// gone), and charges the rest of the group anew; a primary left alone
    /// is a plain file again.
    func release(_ id: EntryID, in table: inout Table) {
        guard let member = table.registry.members[id], let group = table.registry.groups[member.group] else { return }
        table.registry.remove(id)
        table.sharedBytes[id] = nil
        table.memberNodes[id] = nil
        save(&table)
        if table.registry.groups[member.group] != nil {
            settle(member.group, in: &table)
            return
        }
        // The last clone is gone: a primary left is a plain file again.
        table.sharers[member.group] = nil
        table.sharedBytes[group.backing] = nil
        guard let status = try? backingStatus(group) else { return }
        do {
            try state.withLedger { (ledger, _) throws(PurgeCoreError) in
                guard ledger.contains(group.backing) else { return }
                try ledger.update(group.backing, size: UInt64(status.st_size), allocated: ContainerState.allocated(status), cloneSavings: 0)
            }
        } catch {
            Diagnostics.note("accounting drifted from the backing store: \(error)")
        }
    }

    func removeAnchor(of id: EntryID) {
        guard let anchors else { return }
        let name = LinkedCloneRegistry.anchorName(of: id)
        guard let status = try? anchors.status(of: name), EntryID(status) == id else { return }
        try? anchors.unlink(name)
    }

    /// The backing file's status, through a descriptor closed at once (one
    /// left open each settle kept a deleted backing's blocks until the daemon ended).
    func backingStatus(_ group: LinkedCloneRegistry.Group) throws(Errno) -> stat {
        let file = try openBacking(group)
        defer { file.closeQuietly() }
        return try file.status()
    }

    func openBacking(_ group: LinkedCloneRegistry.Group) throws(Errno) -> FileDescriptor {
        let file = try FileHandle(stored: (group.handleType, group.handle)).open(on: root, flags: O_RDONLY)
        guard let status = try? file.status(), EntryID(status) == group.backing else {
            file.closeQuietly()
            throw Errno(ESTALE)
        }
        return file
    }
}
