import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// Whether an open file holds a read-only stand-in for the writable
/// descriptor it was opened for (while its inode's data is shared), and
/// whether it counts as one of the inode's writers (`InodeSharing`).
final class WriterProtection: Sendable {
    let protected = Atomic<Bool>(false)
    let counted = Atomic<Bool>(false)
}

/// Writers never hold a writable descriptor on shared data (linked clones):
/// a file opened for writing while its data is shared holds a read-only
/// descriptor (it is *protected*), and gets its writable one back after the
/// clone is broken (`unprotect`, from the backend's `beforeModify`).
extension OpenFile {
    /// Opens `inode` for I/O with the backing `flags`; a writer of shared
    /// data reads it, read-only (`readOnly`), until its first write. Its
    /// number is taken first, before the backing file is opened.
    static func open(_ inode: Inode, flags: Int32, readOnly: Int32) throws(Errno) -> OpenFile {
        let handle = FileHandleID.next()
        let standIn = writes(flags) && inode.sharing.isShared
        let descriptor = try inode.withDescriptor { (path) throws(Errno) in try path.reopen(flags: standIn ? readOnly : flags) }
        let file = try OpenFile(descriptor: descriptor, inode: inode, flags: flags, handle: handle)
        if file.isProtected && !standIn, let stand = try? inode.withDescriptor({ (path) throws(Errno) in try path.reopen(flags: readOnly) }) {
            file.repoint(to: stand, protecting: true)  // shared since we looked
        }
        return file
    }

    /// Opened for writing but holding a read-only descriptor for now.
    var isProtected: Bool { protection.protected.load(ordering: .acquiring) }

    /// Replaces the descriptor by `new` (taken over); `protecting` says it is
    /// a read-only stand-in for a writable one.
    func repoint(to new: FileDescriptor, protecting: Bool) {
        replaceDescriptor(with: new)
        // A protected file is no writer.
        if protecting, protection.counted.exchange(false, ordering: .relaxed) { inode.sharing.dismissWriter() }
        protection.protected.store(protecting && isWritable, ordering: .releasing)
    }

    /// Gives a protected file its writable descriptor back, reopened from
    /// the inode, once its data is no longer shared. No-op otherwise.
    func unprotect() throws(Errno) {
        guard isProtected, inode.sharing.admitWriter() else { return }
        do {
            let writable = try inode.withDescriptor { (path) throws(Errno) in try path.reopen(flags: flags & ~(O_CREAT | O_EXCL | O_TRUNC)) }
            protection.counted.store(true, ordering: .relaxed)
            repoint(to: writable, protecting: false)
        } catch {
            inode.sharing.dismissWriter()
            throw error
        }
    }
}
