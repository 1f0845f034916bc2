import Glibc

/// A child's process group (started with `ownProcessGroup`, so its ID is the
/// child's pid) and the terminal it may take over: what `purgefs run` needs
/// to pass signals on to a command and everything it started, and to let
/// that command read the terminal.
public enum ProcessGroup {
    /// Sends `signal` to every process in the group `leader` leads; a group
    /// that is gone already is no error. Wraps `kill(2)` with a negative pid.
    public static func signal(_ leader: ProcessID, _ signal: Int32) throws(Errno) {
        do throws(Errno) {
            _ = try checked { kill(-leader.rawValue, signal) }
        } catch {
            if error != .noSuchProcess { throw error }
        }
    }

    /// This process's group. Wraps `getpgrp(2)`.
    public static var current: ProcessID { ProcessID(rawValue: getpgrp()) }

    /// The foreground process group of the terminal at `descriptor`, or
    /// `nil` when it is not a terminal. Wraps `tcgetpgrp(3)`.
    public static func foreground(of descriptor: FileDescriptor) -> ProcessID? {
        let group = tcgetpgrp(descriptor.rawValue)
        return group > 0 ? ProcessID(rawValue: group) : nil
    }

    /// Makes `group` the foreground process group of the terminal at
    /// `descriptor`, with `SIGTTOU` ignored for the call (a process in the
    /// background would be stopped by it). Wraps `tcsetpgrp(3)`, `sigaction(2)`.
    public static func setForeground(_ group: ProcessID, of descriptor: FileDescriptor) throws(Errno) {
        var ignore = sigaction(), previous = sigaction()
        ignore.__sigaction_handler = .init(sa_handler: SIG_IGN)
        sigemptyset(&ignore.sa_mask)
        _ = try checked { sigaction(SIGTTOU, &ignore, &previous) }
        defer { _ = sigaction(SIGTTOU, &previous, nil) }
        _ = try checked { tcsetpgrp(descriptor.rawValue, group.rawValue) }
    }
}
