import CLinux
import Glibc

/// The calling thread's own state: its file-system identity and its turn on
/// the CPU. Linux keeps the file-system uid, gid and (through the raw
/// syscall) the supplementary groups per thread, so a serving thread can take
/// on a caller's identity without touching the others.
public enum CurrentThread {
    /// Makes `user` the thread's file-system uid. setfsuid(2) reports no
    /// errno and returns the previous id whether or not it changed it; a
    /// second call with an id that is never valid changes nothing and says
    /// what the id is now. Throws `EPERM` when the id did not change to
    /// `user` (no `CAP_SETUID`). Wraps `setfsuid(2)`.
    public static func setFileSystemUser(_ user: uid_t) throws(Errno) {
        _ = clinux_setfsuid(user)
        guard uid_t(bitPattern: clinux_setfsuid(uid_t.max)) == user else { throw Errno.notPermitted }
    }

    /// Makes `group` the thread's file-system gid, checked as
    /// `setFileSystemUser` is. Wraps `setfsgid(2)`.
    public static func setFileSystemGroup(_ group: gid_t) throws(Errno) {
        _ = clinux_setfsgid(group)
        guard gid_t(bitPattern: clinux_setfsgid(gid_t.max)) == group else { throw Errno.notPermitted }
    }

    /// Sets the supplementary groups of the calling thread only (glibc's
    /// `setgroups(3)` would set them for every thread). Wraps the raw
    /// `setgroups(2)` syscall.
    public static func setSupplementaryGroups(_ groups: [gid_t]) throws(Errno) {
        _ = try checked { groups.withUnsafeBufferPointer { clinux_thread_setgroups($0.count, $0.baseAddress) } }
    }

    /// Lets another thread run: for a wait that ends within a few
    /// instructions of another thread's. Wraps `sched_yield(2)`, which
    /// cannot fail on Linux.
    public static func yield() {
        _ = sched_yield()
    }
}
