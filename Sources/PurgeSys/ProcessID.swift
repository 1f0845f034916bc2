import Glibc

/// A process ID, as `posix_spawn` hands it out and `waitpid` takes it.
public struct ProcessID: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: pid_t
    public init(rawValue: pid_t) { self.rawValue = rawValue }

    /// The bare number, as `ps` shows it.
    public var description: String { "\(rawValue)" }
}
