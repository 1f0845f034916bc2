import Glibc

/// This process's own state: environment, identity, session, working
/// directory, inherited descriptors. What a command changes on itself
/// before it serves or starts a daemon; the server's threads never call these.
public enum CurrentProcess {
    /// The environment as `NAME=value` strings. Reads `environ(7)`.
    public static var environment: [String] {
        var result: [String] = []
        guard Int(bitPattern: environ) != 0 else { return result } // NULL after clearenv(3)
        var entry = environ
        while let pointer = entry.pointee {
            result.append(String(cString: pointer))
            entry += 1
        }
        return result
    }

    /// The value of one environment variable. Wraps `getenv(3)`.
    public static func environmentValue(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// Removes an environment variable, so no child inherits it.
    /// Wraps `unsetenv(3)`.
    public static func removeEnvironmentValue(_ name: String) throws(Errno) {
        _ = try checked { unsetenv(name) }
    }

    /// The effective user ID: 0 may unmount with `umount2` itself.
    /// Wraps `geteuid(2)`.
    public static var effectiveUserID: uid_t { geteuid() }

    /// The effective group ID. Wraps `getegid(2)`.
    public static var effectiveGroupID: gid_t { getegid() }

    /// This process's supplementary groups. Wraps `getgroups(2)`.
    public static func supplementaryGroups() throws(Errno) -> [gid_t] {
        while true {
            let count = Int(try checked { getgroups(0, nil) })
            var groups = [gid_t](repeating: 0, count: count)
            do {
                let read = Int(try checked { getgroups(Int32(count), &groups) })
                return Array(groups.prefix(read))
            } catch where error == .invalidArgument {
                continue  // the list grew between the two calls
            }
        }
    }

    /// This process's ID. Wraps `getpid(2)`, which cannot fail.
    public static var id: ProcessID { ProcessID(rawValue: getpid()) }

    /// Sets the mask of permission bits that creating a file takes away,
    /// and returns the previous mask. Wraps `umask(2)`, which cannot fail.
    @discardableResult
    public static func setFileCreationMask(_ mask: mode_t) -> mode_t {
        umask(mask)
    }

    /// Starts a new session without a controlling terminal, as a daemon
    /// does so that the caller's terminal closing cannot signal it.
    /// Wraps `setsid(2)`.
    public static func startSession() throws(Errno) {
        _ = try checked { setsid() }
    }

    /// Changes the working directory. Wraps `chdir(2)`.
    public static func changeDirectory(_ path: String) throws(Errno) {
        _ = try checked(path: path) { chdir($0) }
    }

    /// Sleeps the calling thread for `milliseconds`, resuming after a signal
    /// with the time that is left. For polling against a deadline.
    /// Wraps `nanosleep(2)`.
    public static func sleep(milliseconds: Int) {
        sleep(nanoseconds: UInt64(max(milliseconds, 0)) * 1_000_000)
    }

    /// `sleep(milliseconds:)` to the nanosecond. Wraps `nanosleep(2)`.
    public static func sleep(nanoseconds: UInt64) {
        var request = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR {
            request = remaining
        }
    }

    /// Marks every open descriptor from `lowest` up close-on-exec, so a
    /// child gets only what its file actions give it. A daemon must not keep
    /// a pipe its caller left open (a test harness's, say): the caller would
    /// wait on it for as long as the daemon lives. Only for a short-lived,
    /// single-threaded caller: it changes this process's descriptors.
    /// (`posix_spawn_file_actions_addclosefrom_np` would do this in the child,
    /// but glibc declares it only under `_GNU_SOURCE`.) Best effort: a
    /// descriptor that cannot be marked is one the child could not use either.
    /// Lists `/proc/self/fd` with `readdir(3)`; wraps `fcntl(2)` with `F_SETFD`.
    public static func markDescriptorsCloseOnExec(from lowest: Int32) {
        guard let directory = try? FileDescriptor.open(path: "/proc/self/fd", flags: O_RDONLY | O_DIRECTORY) else { return }
        defer { directory.closeQuietly() }
        guard let stream = try? DirectoryStream(directory) else { return }
        let own = [directory.rawValue, stream.descriptor.rawValue]
        while let entry = try? stream.next() {
            guard let fd = Int32(String(cString: entry.name)), fd >= lowest, !own.contains(fd) else { continue }
            try? FileDescriptor(rawValue: fd).setCloseOnExec()
        }
    }

    /// Closes every descriptor from `lowest` up: for a helper that must hold
    /// nothing of its parent's. Lists `/proc/self/fd`; wraps `close(2)`.
    public static func closeDescriptors(from lowest: Int32) {
        guard let directory = try? FileDescriptor.open(path: "/proc/self/fd", flags: O_RDONLY | O_DIRECTORY) else { return }
        var open: [Int32] = []
        if let stream = try? DirectoryStream(directory) {
            let own = [directory.rawValue, stream.descriptor.rawValue]
            while let entry = try? stream.next() {
                if let fd = Int32(String(cString: entry.name)), fd >= lowest, !own.contains(fd) { open.append(fd) }
            }
        }
        directory.closeQuietly()
        for fd in open { FileDescriptor(rawValue: fd).closeQuietly() }
    }

    /// Ignores `signals` from now on. Wraps `signal(2)` with `SIG_IGN`.
    public static func ignore(_ signals: [Int32]) {
        for number in signals { _ = signal(number, SIG_IGN) }
    }
}

extension CurrentProcess {
    /// CPUs online now (at least 1). Wraps `sysconf(3)` `_SC_NPROCESSORS_ONLN`.
    public static var processorsOnline: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }
}
