import Glibc

/// An open file descriptor. A plain value: whoever opened it closes it.
public struct FileDescriptor: Hashable, Sendable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The working directory, for `*at()` calls that take absolute paths.
    public static let currentWorkingDirectory = FileDescriptor(rawValue: AT_FDCWD)
}

/// A NUL-terminated name handed to us by the kernel or by a caller; never copied.
public typealias CName = UnsafePointer<CChar>

/// Repeats `body` while it fails with `EINTR`; returns its value or throws the errno
/// read right after the call. For blocking calls only: `close` is never retried.
@inline(__always)
func retryingInterrupts<T: BinaryInteger>(_ body: () -> T) throws(Errno) -> T {
    while true {
        let result = body()
        if result != -1 { return result }
        let error = Errno.current
        if error != .interrupted { throw error }
    }
}

/// Returns `body`'s value, or throws the errno read right after the call.
@inline(__always)
func checked<T: BinaryInteger>(_ body: () -> T) throws(Errno) -> T {
    let result = body()
    if result == -1 { throw Errno.current }
    return result
}

/// `checked` for a call that takes a path: converts `path` to a C string for
/// `body` and reads `errno` inside, right after the call.
@inline(__always)
func checked<T: BinaryInteger>(path: String, retryingInterrupts retry: Bool = false, _ body: (CName) -> T) throws(Errno) -> T {
    while true {
        let (result, error) = path.withCString { cPath -> (T, Int32) in
            let result = body(cPath)
            return (result, result == -1 ? errno : 0)
        }
        if result != -1 { return result }
        if retry && error == EINTR { continue }
        throw Errno(error)
    }
}
