import Glibc

extension ProcessID {
    /// Whether the process exists and has not exited: a zombie (its leader
    /// has exited; threads of it may still be on their way out) has.
    /// Reads the state field of `/proc/PID/stat`.
    public var isRunning: Bool {
        guard let stat = try? FileDescriptor.readFile("/proc/\(rawValue)/stat", limit: 4096),
              let close = stat.lastIndex(of: UInt8(ascii: ")")), close + 2 < stat.count
        else { return false }
        return stat[close + 2] != UInt8(ascii: "Z") && stat[close + 2] != UInt8(ascii: "X")
    }
}
