import PurgeCore
import PurgeSys

/// A cloud eviction of a linked clone: a member leaves the shared data
/// without copying it (its anchor, emptied, is renamed over its name, as a
/// break before a truncation to nothing does), and the tier makes that
/// empty file its placeholder; the other names keep reading the data, and
/// the last of them frees it when evicted. The primary's identity is the
/// backing inode itself: it could leave the data only by a copy to the
/// members, so its eviction is refused while members share it.
extension LinkedClones {
    func evictionDropsShared(_ id: EntryID, backing: EntryID) -> Bool {
        isShared(backing: backing) && !isMember(id)
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

    func leaveSharedData(_ inode: Inode, filesystem fs: ContainerFileSystem) throws(Errno) -> Bool {
        guard inode.isRegularFile, isMember(inode.key) else { return false }
        try breakMember(inode, keepingData: false, breaking: CloneBreaking(fs))
        for file in inode.sharing.openFiles { try file.unprotect() }
        return true
    }
}
