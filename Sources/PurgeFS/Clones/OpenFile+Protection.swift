import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// Writers never hold a writable descriptor on shared data (linked clones):
/// a file opened for writing while its data is shared holds a read-only
/// descriptor (it is *protected*), and gets its writable one back after the
/// clone is broken (`unprotect`, from the backend's `beforeModify`). Which
/// files are protected, and which count as writers, the inode's
/// `InodeSharing` keeps by `FileHandleID`.
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
    var isProtected: Bool { inode.sharing.isProtected(handle) }

    /// Replaces the descriptor by `new` (taken over); `protecting` says it is
    /// a read-only stand-in for a writable one.
    func repoint(to new: FileDescriptor, protecting: Bool) {
        replaceDescriptor(with: new)
        inode.sharing.repointed(handle, protecting: protecting && isWritable)
    }

    /// Gives a protected file its writable descriptor back, reopened from
    /// the inode, once its data is no longer shared. No-op otherwise.
    func unprotect() throws(Errno) {
        guard inode.sharing.admitWriter(handle) else { return }
        do {
            let writable = try inode.withDescriptor { (path) throws(Errno) in try path.reopen(flags: flags & ~(O_CREAT | O_EXCL | O_TRUNC)) }
            repoint(to: writable, protecting: false)
        } catch {
            inode.sharing.dismissWriter(handle)
            throw error
        }
    }
}
