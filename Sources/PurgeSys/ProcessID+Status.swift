import Glibc

extension ProcessID {
    /// What `/proc/PID/stat` says of a process.
    public struct Status: Sendable, Equatable {
        /// The state letter (field 3): `R`, `S`, `D`, `T`, `Z` (exited, not reaped), ...
        public var state: UInt8
        /// When it started, in clock ticks since boot (field 22): with the
        /// PID, an identity that survives PID reuse.
        public var startTime: UInt64
    }

    /// The process's status, or nil when there is no such process.
    /// Reads `/proc/PID/stat`.
    public var status: Status? {
        guard let stat = try? FileDescriptor.readFile("/proc/\(rawValue)/stat", limit: 4096),
              // The command name (field 2) may hold spaces and parentheses: the fields after it follow the last ')'.
              let close = stat.lastIndex(of: UInt8(ascii: ")")), close + 2 < stat.count
        else { return nil }
        let fields = stat[(close + 2)...].split(separator: UInt8(ascii: " "))
        guard fields.count > 19, let start = UInt64(String(decoding: fields[19], as: UTF8.self)) else { return nil }
        return Status(state: stat[close + 2], startTime: start)
    }

    /// Whether the process exists and has not exited: a zombie (its leader
    /// has exited; threads of it may still be on their way out) has.
    public var isRunning: Bool {
        guard let state = status?.state else { return false }
        return state != UInt8(ascii: "Z") && state != UInt8(ascii: "X")
    }

    /// Whether the process that started at `startTime` has ended and let go
    /// of all it held: reaped, its number taken by another process, or a
    /// zombie whose other threads have exited (descriptors, and the locks on
    /// them, go with the last thread, not with the leader).
    public func hasEnded(startedAt startTime: UInt64) -> Bool {
        guard let status, status.startTime == startTime else { return true }
        return status.state == UInt8(ascii: "X") || (status.state == UInt8(ascii: "Z") && threadCount <= 1)
    }

    /// Threads the process has now (`/proc/PID/task`); 0 when it is gone.
    public var threadCount: Int {
        guard let directory = try? FileDescriptor.open(path: "/proc/\(rawValue)/task", flags: O_RDONLY | O_DIRECTORY),
              let stream = try? DirectoryStream(directory)
        else { return 0 }
        defer { directory.closeQuietly() }
        var count = 0
        while let entry = try? stream.next() { if !entry.isDotOrDotDot { count += 1 } }
        return count
    }
}
