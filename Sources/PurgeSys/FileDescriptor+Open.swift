import CLinux
import Glibc

/// Open flags by name: those Swift's Glibc module does not name, and the
/// access modes, for callers that do not import Glibc.
public enum OpenFlags {
    public static let readOnly = O_RDONLY
    public static let writeOnly = O_WRONLY
    public static let readWrite = O_RDWR
    public static let path = clinux_O_PATH
    public static let direct = clinux_O_DIRECT
    public static let noAccessTime = clinux_O_NOATIME
}

extension FileDescriptor {
    /// Opens `name` relative to the directory `directory`. Wraps `openat(2)`.
    public static func open(
        _ name: CName, in directory: FileDescriptor, flags: Int32, mode: mode_t = 0
    ) throws(Errno) -> FileDescriptor {
        let fd = try retryingInterrupts { openat(directory.rawValue, name, flags | O_CLOEXEC, mode) }
        return FileDescriptor(rawValue: fd)
    }

    /// Opens a path (absolute, or relative to the working directory). Wraps `open(2)`.
    public static func open(path: String, flags: Int32, mode: mode_t = 0) throws(Errno) -> FileDescriptor {
        let fd = try checked(path: path, retryingInterrupts: true) { openat(AT_FDCWD, $0, flags | O_CLOEXEC, mode) }
        return FileDescriptor(rawValue: fd)
    }

    /// Opens the file this descriptor refers to afresh with `flags`, through
    /// `/proc/self/fd`: how an `O_PATH` descriptor becomes a readable one.
    /// Wraps `openat(2)` on the proc magic link.
    public func reopen(flags: Int32) throws(Errno) -> FileDescriptor {
        try FileDescriptor.open(path: procPath, flags: flags & ~(O_NOFOLLOW | O_CREAT | O_EXCL))
    }

    /// `/proc/self/fd/N`: a path that names this descriptor's file for calls
    /// that take only paths (xattrs, chmod, truncate).
    public var procPath: String { "/proc/self/fd/\(rawValue)" }

    /// Duplicates the descriptor. Wraps `fcntl(F_DUPFD_CLOEXEC)`.
    public func duplicate() throws(Errno) -> FileDescriptor {
        FileDescriptor(rawValue: try checked { fcntl(rawValue, F_DUPFD_CLOEXEC, 0) })
    }

    /// Closes the descriptor. Never retried: after `EINTR` the descriptor is gone already.
    /// Wraps `close(2)`.
    public func close() throws(Errno) {
        _ = try checked { Glibc.close(rawValue) }
    }

    /// Closes the descriptor, ignoring errors (for cleanup paths that have nothing to report).
    public func closeQuietly() {
        _ = Glibc.close(rawValue)
    }
}
