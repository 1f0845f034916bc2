import Glibc
import PurgeCore
import PurgeSys

/// Following names and data: renames, unlinks, closes, writes, purges.
extension LinkedClones {
    /// A name of `id` (on backing file `backing`) moved: a member's is
    /// recorded, and the group charged anew (it may have left or entered a zone).
    func moved(_ id: EntryID, backing: EntryID, to name: LinkedCloneRegistry.Name) {
        guard isActive else { return }
        guarded.withLock { table in
            if let member = table.registry.members[id] {
                DebugSteps.reached("member-moved")
                table.registry.move(id, to: name)
                save(&table)
                settle(member.group, in: &table)
            } else if let group = table.registry.group(backedBy: backing) {
                settle(group, in: &table)
            }
        }
    }

    /// A name of `id` (on backing file `backing`) was removed: a member
    /// loses its name, and is forgotten once closed; a group whose primary
    /// lost a name is charged anew.
    func removed(_ id: EntryID, backing: EntryID) {
        dropSparseIfGone(id)
        // The original's last name gone, its data (a base) is charged to a sparse clone.
        defer { if sparse.isBase(backing) { chargeSparseMembers(of: backing) } }
        guard isActive else { return }
        guarded.withLock { table in
            if table.registry.members[id] != nil {
                DebugSteps.reached("member-removed")
                table.registry.unname(id)
                save(&table)
                if !state.read({ ledger, _ in ledger.contains(id) }) {
                    forget(id, in: &table)
                    return
                }
            }
            if let group = table.registry.group(backedBy: backing) { settle(group, in: &table) }
        }
    }

    /// A member the ledger no longer has (unlinked and closed, or purged) is forgotten.
    func forgetIfGone(_ id: EntryID) {
        guard isActive else { return }
        guarded.withLock { table in
            guard table.registry.members[id] != nil, !state.read({ ledger, _ in ledger.contains(id) }) else { return }
            forget(id, in: &table)
        }
    }

    /// The figures of `id` may have changed (a write, truncate, allocation,
    /// or one that failed): a file in a group is charged with its group.
    /// Returns false when `id` is in none (the caller records it as usual).
    func changed(_ id: EntryID) -> Bool {
        guard isActive else { return false }
        return guarded.withLock { table in
            guard let group = table.registry.members[id]?.group ?? table.registry.group(backedBy: id) else { return false }
            settle(group, in: &table)
            return true
        }
    }

    /// A file was purged: a member is forgotten, a primary's group charged anew.
    func purged(_ id: EntryID) {
        dropSparseIfGone(id, keepingForItsNode: true)
        // A purged original's data (a base) is charged to its sparse clones.
        defer { if sparse.isBase(id) { chargeSparseMembers(of: id) } }
        guard isActive else { return }
        guarded.withLock { table in
            if table.registry.members[id] != nil {
                if !state.read({ ledger, _ in ledger.contains(id) }) { forget(id, in: &table) }
            } else if let group = table.registry.group(backedBy: id) {
                settle(group, in: &table)
            }
        }
    }
}
