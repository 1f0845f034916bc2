import Glibc

/// How a child ended, decoded from a `waitpid` status word. Glibc's
/// `WIFEXITED`-family are macros Swift cannot import; this is their layout
/// on Linux: low 7 bits the signal (0 = exited), next byte the exit code.
public struct WaitStatus: Equatable, Sendable, CustomStringConvertible {
    public let raw: Int32
    public init(raw: Int32) { self.raw = raw }

    /// The status the child passed to `exit`, if it exited.
    public var exitCode: Int32? { raw & 0x7f == 0 ? (raw >> 8) & 0xff : nil }

    /// The signal that killed the child, if one did.
    public var signal: Int32? {
        let low = raw & 0x7f
        return low != 0 && low != 0x7f ? low : nil
    }

    /// "exited with status 1", "was killed by signal 9 (Killed)": the end of
    /// a sentence that names the child. The signal's name from `strsignal(3)`.
    public var description: String {
        if let exitCode { return "exited with status \(exitCode)" }
        if let signal {
            let name = strsignal(signal).map { String(cString: $0) } ?? "signal \(signal)"
            return "was killed by signal \(signal) (\(name))"
        }
        return "stopped (wait status \(raw))"
    }
}
