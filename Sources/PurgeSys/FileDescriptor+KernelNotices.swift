import CLinux
import Glibc

/// Notices to the kernel's FUSE connection, written to a `/dev/fuse`
/// descriptor. They may block in the kernel (an entry notice takes the
/// directory's lock), so callers send them from a thread that holds nothing
/// a request handler could wait for (`KernelNotifier`).
extension FileDescriptor {
    /// Drops `name` in directory node `parent` (and marks node `child` deleted
    /// when given). Wraps `FUSE_NOTIFY_DELETE` / `FUSE_NOTIFY_INVAL_ENTRY`.
    public func notifyEntryGone(parent: UInt64, child: UInt64?, name: UnsafeBufferPointer<CChar>) throws(Errno) {
        let result = child.map { clinux_fuse_notify_delete(rawValue, parent, $0, name.baseAddress, name.count) }
            ?? clinux_fuse_notify_inval_entry(rawValue, parent, name.baseAddress, name.count)
        if result < 0 { throw Errno(-result) }
    }

    /// Drops node `node`'s cached attributes, and its cached pages too when
    /// `pages`. Wraps `FUSE_NOTIFY_INVAL_INODE`.
    public func notifyNodeChanged(_ node: UInt64, pages: Bool) throws(Errno) {
        let result = clinux_fuse_notify_inval_inode(rawValue, node, pages ? 0 : -1, 0)
        if result < 0 { throw Errno(-result) }
    }
}
