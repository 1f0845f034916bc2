import CLinux
import Glibc

/// Inode attributes: stat, mode, owner, times, statfs.
extension FileDescriptor {
    /// The attributes of the file this descriptor refers to, not following a
    /// symlink it may name. Wraps `fstatat(2)` with `AT_EMPTY_PATH`.
    public func status() throws(Errno) -> stat {
        var result = stat()
        _ = try checked { fstatat(rawValue, "", &result, clinux_AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) }
        return result
    }

    /// The attributes of `name` in this directory, not following a symlink.
    /// Wraps `fstatat(2)` with `AT_SYMLINK_NOFOLLOW`.
    public func status(of name: CName) throws(Errno) -> stat {
        var result = stat()
        _ = try checked { fstatat(rawValue, name, &result, AT_SYMLINK_NOFOLLOW) }
        return result
    }

    /// When the inode of `name` in this directory (or, for nil, of this
    /// descriptor) was made, in nanoseconds since the epoch; nil where the
    /// filesystem does not keep it. It tells a new inode from an earlier
    /// one that had the same number. Wraps `statx(2)` with `STATX_BTIME`.
    public func birthTime(of name: CName? = nil) throws(Errno) -> UInt64? {
        let result = name.map { clinux_birth_time(rawValue, $0) } ?? clinux_birth_time(rawValue, "")
        if result < 0 { throw Errno(Int32(-result)) }
        return result == 0 ? nil : UInt64(result)
    }

    /// Changes the mode bits. Wraps `chmod(2)` on the `/proc/self/fd` link,
    /// which works for `O_PATH` descriptors.
    public func changeMode(_ mode: mode_t) throws(Errno) {
        _ = try checked(path: procPath) { path in chmod(path, mode) }
    }

    /// Changes owner and group; `UInt32.max` (-1) leaves one alone. Does not
    /// follow a symlink. Wraps `fchownat(2)` with `AT_EMPTY_PATH`.
    public func changeOwner(user: uid_t, group: gid_t) throws(Errno) {
        _ = try checked { fchownat(rawValue, "", user, group, clinux_AT_EMPTY_PATH) }
    }

    /// Sets access and modification times (`UTIME_NOW`, `UTIME_OMIT` allowed),
    /// not following a symlink. Wraps `utimensat(2)` with `AT_EMPTY_PATH`.
    public func setTimes(access: timespec, modification: timespec) throws(Errno) {
        var times = (access, modification)
        _ = try withUnsafePointer(to: &times) { (pointer) throws(Errno) -> Int32 in
            try pointer.withMemoryRebound(to: timespec.self, capacity: 2) { (pair) throws(Errno) -> Int32 in
                try checked { utimensat(rawValue, "", pair, clinux_AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) }
            }
        }
    }

    /// Sets the size of the file an `O_PATH` descriptor refers to. Wraps `truncate(2)`.
    public func truncateThroughPath(to size: Int64) throws(Errno) {
        _ = try checked(path: procPath, retryingInterrupts: true) { path in Glibc.truncate(path, off_t(size)) }
    }

    /// Statistics of the filesystem holding this file. Wraps `fstatfs(2)`.
    public func fileSystemStatus() throws(Errno) -> statvfs {
        var result = statvfs()
        _ = try checked { fstatvfs(rawValue, &result) }
        return result
    }

    /// Checks `mode` (`R_OK`...) with the thread's file-system identity.
    /// Wraps `faccessat(2)` with `AT_EACCESS` on the `/proc/self/fd` link.
    public func checkAccess(_ mode: Int32) throws(Errno) {
        _ = try checked(path: procPath) { path in faccessat(AT_FDCWD, path, mode, clinux_AT_EACCESS) }
    }
}

/// Time values with special meanings for `setTimes`.
public enum TimeSpec {
    /// `UTIME_NOW`
    public static var now: timespec { timespec(tv_sec: 0, tv_nsec: clinux_UTIME_NOW) }
    /// `UTIME_OMIT`
    public static var omit: timespec { timespec(tv_sec: 0, tv_nsec: clinux_UTIME_OMIT) }
}
