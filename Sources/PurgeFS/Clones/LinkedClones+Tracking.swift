import Glibc
import PurgeCore
import PurgeSys

/// Following names and data: renames, unlinks, closes, writes, purges.
extension LinkedClones {
    /// A name of `id` (on backing file `backing`) moved: a member's is
    /// recorded, and the group charged anew (it may have left or entered a zone).
    func moved(_ id: EntryID, backing: EntryID, to name: LinkedCloneRegistry.Name) {
        guard isActive else { return }
        lock.withLock {
            if let member = registry.members[id] {
                registry.move(id, to: name)
                save()
                settle(member.group)
            } else if let group = registry.group(backedBy: backing) {
                settle(group)
            }
        }
    }

    /// A name of `id` (on backing file `backing`) was removed: a member
    /// loses its name, and is forgotten once closed; a group whose primary
    /// lost a name is charged anew.
    func removed(_ id: EntryID, backing: EntryID) {
        guard isActive else { return }
        lock.withLock {
            if registry.members[id] != nil {
                registry.unname(id)
                save()
                if !state.read({ ledger, _ in ledger.contains(id) }) {
                    forget(id)
                    return
                }
            }
            if let group = registry.group(backedBy: backing) { settle(group) }
        }
    }

    /// A member the ledger no longer has (unlinked and closed, or purged) is forgotten.
    func forgetIfGone(_ id: EntryID) {
        guard isActive else { return }
        lock.withLock {
            guard registry.members[id] != nil, !state.read({ ledger, _ in ledger.contains(id) }) else { return }
            forget(id)
        }
    }

    /// The figures of `id` may have changed (a write, truncate, allocation,
    /// or one that failed): a file in a group is charged with its group.
    /// Returns false when `id` is in none (the caller records it as usual).
    func changed(_ id: EntryID) -> Bool {
        guard isActive else { return false }
        return lock.withLock {
            guard let group = registry.members[id]?.group ?? registry.group(backedBy: id) else { return false }
            settle(group)
            return true
        }
    }

    /// A file was purged: a member is forgotten, a primary's group charged anew.
    func purged(_ id: EntryID) {
        guard isActive else { return }
        lock.withLock {
            if registry.members[id] != nil {
                if !state.read({ ledger, _ in ledger.contains(id) }) { forget(id) }
            } else if let group = registry.group(backedBy: id) {
                settle(group)
            }
        }
    }
}
