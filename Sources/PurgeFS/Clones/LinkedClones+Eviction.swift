import PurgeCore
import PurgeSys

/// A cloud eviction of a linked clone: a member leaves the shared data
/// without copying it (its anchor, emptied, is renamed over its name, as a
/// break before a truncation to nothing does), and the tier makes that
/// empty file its placeholder; the other names keep reading the data, and
/// the last of them frees it when evicted. The primary's identity is the
/// backing inode itself: it could leave the data only by a copy to the
/// members, so its eviction is refused while members share it (a base
/// that sparse clones share too). A sparse clone is evicted by leaving
/// its base: its map dropped, its own blocks freed.
extension LinkedClones {
    func evictionDropsShared(_ id: EntryID, backing: EntryID) -> Bool {
        isShared(backing: backing) && !isMember(id) || sparse.isBase(backing)
    }

    func withDataHeld<T>(of inode: Inode, _ body: () throws(Errno) -> T) throws(Errno) -> T {
        try withDataLocks(of: [inode], body)
    }

    /// Nil also when a primary's break re-pointed the file meanwhile.
    func withDataHeldIfFree<T>(of inode: Inode, _ body: () throws(Errno) -> T) throws(Errno) -> T? {
        let backing = inode.backing
        return try dataLocks.withLockIfFree(backing) { () throws(Errno) -> T? in
            guard inode.backing == backing else { return nil }
            return try body()
        } ?? nil
    }

    /// A sparse clone leaves its base: cut to nothing through its view and
    /// its map dropped (its own blocks freed, the base's left to the others).
    func leaveSharedData(_ inode: Inode, breaking: CloneBreaking) throws(Errno) -> Bool {
        if inode.isRegularFile, let file = sparse.file(of: inode.key) {
            // Under its data lock already (`withDataHeld`).
            let base = file.snapshot.map.base
            try file.truncate(to: 0)
            try sparse.drop(inode.key)
            chargeSparseMembers(of: base)
            return true
        }
        guard inode.isRegularFile, isMember(inode.key) else { return false }
        try breakMember(inode, keepingData: false, breaking: breaking)
        for file in inode.sharing.openFiles { try file.unprotect() }
        return true
    }
}
