import Glibc

/// A POSIX error number with readable names; each doc names the C constant.
public struct Errno: Error, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32
    public init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// The calling thread's `errno`, read right after a failed call.
    public static var current: Errno { Errno(errno) }

    public var description: String { String(cString: strerror(rawValue)) }

    /// `EPERM`
    public static let notPermitted = Errno(EPERM)
    /// `ENOENT`
    public static let noEntry = Errno(ENOENT)
    /// `ESRCH`
    public static let noSuchProcess = Errno(ESRCH)
    /// `EINTR`
    public static let interrupted = Errno(EINTR)
    /// `EIO`
    public static let ioError = Errno(EIO)
    /// `EBADF`
    public static let badFileDescriptor = Errno(EBADF)
    /// `EAGAIN`
    public static let tryAgain = Errno(EAGAIN)
    /// `ENOMEM`
    public static let noMemory = Errno(ENOMEM)
    /// `EACCES`
    public static let accessDenied = Errno(EACCES)
    /// `EBUSY`
    public static let busy = Errno(EBUSY)
    /// `EEXIST`
    public static let exists = Errno(EEXIST)
    /// `EXDEV`
    public static let crossDevice = Errno(EXDEV)
    /// `ENOTDIR`
    public static let notDirectory = Errno(ENOTDIR)
    /// `EISDIR`
    public static let isDirectory = Errno(EISDIR)
    /// `EINVAL`
    public static let invalidArgument = Errno(EINVAL)
    /// `ENOSPC`
    public static let noSpace = Errno(ENOSPC)
    /// `ERANGE`
    public static let outOfRange = Errno(ERANGE)
    /// `ENAMETOOLONG`
    public static let nameTooLong = Errno(ENAMETOOLONG)
    /// `ENOSYS`
    public static let notImplemented = Errno(ENOSYS)
    /// `ENOTEMPTY`
    public static let notEmpty = Errno(ENOTEMPTY)
    /// `ELOOP`
    public static let tooManySymlinks = Errno(ELOOP)
    /// `EMFILE`: this process has as many descriptors open as it may.
    public static let tooManyOpenFiles = Errno(EMFILE)
    /// `ENFILE`: the system has as many open files as it may.
    public static let tooManyOpenFilesInSystem = Errno(ENFILE)
    /// `ENODATA`
    public static let noData = Errno(ENODATA)
    /// `EOPNOTSUPP`
    public static let notSupported = Errno(EOPNOTSUPP)
    /// `EROFS`
    public static let readOnlyFileSystem = Errno(EROFS)
    /// `ENOTCONN`: what a FUSE mount whose daemon died answers.
    public static let notConnected = Errno(ENOTCONN)
    /// `ENETUNREACH`: a remote that cannot be reached (the cloud tier offline).
    public static let networkUnreachable = Errno(ENETUNREACH)
    /// `ETIMEDOUT`: a peer that did not answer in time.
    public static let timedOut = Errno(ETIMEDOUT)
    /// `ECONNREFUSED`: nothing listens at a socket's address.
    public static let connectionRefused = Errno(ECONNREFUSED)
    /// `EMSGSIZE`: a datagram that was not sent whole.
    public static let messageTooLong = Errno(EMSGSIZE)
}
