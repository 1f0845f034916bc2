import CLinux
import Glibc

/// Descriptor plumbing for starting and detaching processes: pipes, the
/// standard streams, and which descriptors a child inherits.
extension FileDescriptor {
    /// Descriptor 0.
    public static let standardInput = FileDescriptor(rawValue: STDIN_FILENO)
    /// Descriptor 1.
    public static let standardOutput = FileDescriptor(rawValue: STDOUT_FILENO)
    /// Descriptor 2.
    public static let standardError = FileDescriptor(rawValue: STDERR_FILENO)

    /// Whether the descriptor is a terminal; false for anything else,
    /// a closed descriptor included (`ENOTTY`, `EBADF`). Wraps `isatty(3)`.
    public var isTerminal: Bool { isatty(rawValue) == 1 }

    /// A pipe as `(read, write)`, both ends close-on-exec from the start, so
    /// a child spawned by another thread meanwhile cannot inherit either.
    /// Wraps `pipe2(2)` with `O_CLOEXEC`.
    public static func pipe() throws(Errno) -> (read: FileDescriptor, write: FileDescriptor) {
        var fds: [Int32] = [-1, -1]
        _ = try checked { clinux_pipe2(&fds, O_CLOEXEC) }
        return (FileDescriptor(rawValue: fds[0]), FileDescriptor(rawValue: fds[1]))
    }

    /// Makes `target` refer to this descriptor's file, closing what `target`
    /// was; `target` is not close-on-exec afterwards. Not retried on `EINTR`:
    /// like `close`, the old `target` may be gone already. Wraps `dup2(2)`.
    public func duplicate(onto target: FileDescriptor) throws(Errno) {
        _ = try checked { dup2(rawValue, target.rawValue) }
    }

    /// Marks the descriptor close-on-exec, so no program this process starts
    /// inherits it. Wraps `fcntl(2)` with `F_GETFD` and `F_SETFD`.
    public func setCloseOnExec() throws(Errno) {
        let flags = try checked { fcntl(rawValue, F_GETFD) }
        if flags & FD_CLOEXEC == 0 {
            _ = try checked { fcntl(rawValue, F_SETFD, flags | FD_CLOEXEC) }
        }
    }

    /// Whether the descriptor is close-on-exec. Wraps `fcntl(2)` with `F_GETFD`.
    public func isCloseOnExec() throws(Errno) -> Bool {
        try checked { fcntl(rawValue, F_GETFD) } & FD_CLOEXEC != 0
    }
}
