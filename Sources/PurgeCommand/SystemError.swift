import Glibc

/// A failed libc call: which call, on what, and `errno`.
struct SystemError: Error, Equatable, Sendable, CustomStringConvertible {
    let code: Int32

    /// The current `errno`; read it right after the failing call.
    static var current: SystemError { SystemError(code: errno) }

    /// `strerror(3)` text, e.g. "No such file or directory".
    var description: String { String(cString: strerror(code)) }

    var isNotConnected: Bool { code == ENOTCONN }
}
