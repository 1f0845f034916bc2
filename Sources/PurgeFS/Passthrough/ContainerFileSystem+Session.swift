import CFuse
import Glibc

/// Negotiation with the kernel at INIT.
extension ContainerFileSystem {
    func initialize(_ connection: UnsafeMutablePointer<fuse_conn_info>) {
        let capable = connection.pointee.capable
        // Zero-copy both ways, readdirplus for `ls -l`, parallel lookups in one directory.
        let wanted = UInt32(
            FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE | FUSE_CAP_SPLICE_READ | FUSE_CAP_READDIRPLUS
                | FUSE_CAP_READDIRPLUS_AUTO | FUSE_CAP_PARALLEL_DIROPS | FUSE_CAP_ASYNC_READ
                | FUSE_CAP_ATOMIC_O_TRUNC | FUSE_CAP_ASYNC_DIO)
        connection.pointee.want |= wanted & capable
        // Splicing stays on with the ring: a ring thread's read is read
        // into its entry, and any other spliced reply of a ring thread is
        // committed through the ring (KernelWire); replies to requests that
        // came through /dev/fuse are spliced there.
        // No writeback cache: a write that does not fit must fail with ENOSPC
        // from that very write(2), not later at close. No killpriv v1 (the
        // daemon, as root, would clear nothing): KernelWire asks for v2, where
        // the kernel says when to clear suid/sgid.
        // No automatic invalidation of a file's cached pages when a GETATTR
        // shows a new mtime: libfuse asks for it by default, and then every
        // write through the mount (which already updates the cache) cost the
        // whole file's cache at the next GETATTR, so a database re-read its
        // tables through the daemon after each write. The data changes behind
        // the kernel's back only where purgefs says so itself (`dataChanged`:
        // changes behind the mount, a crash, a purge, a download).
        connection.pointee.want &= ~UInt32(FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_HANDLE_KILLPRIV | FUSE_CAP_AUTO_INVAL_DATA)
        connection.pointee.time_gran = 1
        whenReady()
    }
}
