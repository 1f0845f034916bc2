import CLinux
import Glibc

/// Starting and reaping child processes with `posix_spawn`, never `fork`:
/// forking a multithreaded Swift process can leave the child holding locks
/// that no thread will release.
public enum ChildProcess {
    /// How to set up the child's descriptors.
    public enum FileAction: Sendable {
        /// `dup2(from, to)` in the child (clears close-on-exec on `to`).
        case duplicate(FileDescriptor, to: FileDescriptor)
        /// Open `path` as descriptor `fd` in the child.
        case open(String, as: FileDescriptor, flags: Int32)
        /// Start in directory `path` (the actions after it open relative to it).
        case changeDirectory(String)
    }

    /// Starts `path` with `arguments` (including argv[0]) and `environment`;
    /// `searchPath` looks `path` up in `$PATH` (`posix_spawnp`). Descriptors
    /// marked close-on-exec stay closed in the child. `ownProcessGroup` puts
    /// the child in a new process group, so the terminal's Ctrl-C reaches
    /// only us and we decide what happens to it (`POSIX_SPAWN_SETPGROUP`).
    /// The child starts with no signal blocked (`POSIX_SPAWN_SETSIGMASK`).
    /// Wraps `posix_spawn(3)`.
    public static func spawn(_ path: String, arguments: [String], environment: [String],
                             fileActions: [FileAction] = [], searchPath: Bool = false,
                             ownProcessGroup: Bool = false) throws(Errno) -> ProcessID {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // The child starts with no signal blocked, whatever the calling
        // thread blocks (a test runner's or a dispatch thread's mask would
        // otherwise pass through exec, and a SIGTERM meant for the child never arrive).
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        // These return an error number rather than setting errno.
        var result = posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETSIGMASK | (ownProcessGroup ? POSIX_SPAWN_SETPGROUP : 0)))
        if result == 0 { result = posix_spawnattr_setsigmask(&attributes, &noSignals) }
        if result == 0 && ownProcessGroup { result = posix_spawnattr_setpgroup(&attributes, 0) }
        guard result == 0 else { throw Errno(result) }
        for action in fileActions {
            switch action {
            case .duplicate(let from, let to):
                result = posix_spawn_file_actions_adddup2(&actions, from.rawValue, to.rawValue)
            case .open(let path, let fd, let flags):
                result = posix_spawn_file_actions_addopen(&actions, fd.rawValue, path, flags, 0)
            case .changeDirectory(let path):
                result = clinux_spawn_addchdir(&actions, path)
            }
            guard result == 0 else { throw Errno(result) }
        }
        let argv = CStringArray(arguments), envp = CStringArray(environment)
        var pid: pid_t = 0
        result = argv.withPointer { argvPointer in
            envp.withPointer { envpPointer in
                searchPath
                    ? posix_spawnp(&pid, path, &actions, &attributes, argvPointer, envpPointer)
                    : posix_spawn(&pid, path, &actions, &attributes, argvPointer, envpPointer)
            }
        }
        guard result == 0 else { throw Errno(result) }
        return ProcessID(rawValue: pid)
    }

    /// Waits for `pid` to end; retries `EINTR`. Wraps `waitpid(2)`.
    /// Sends `SIGTERM` to child `pid` and reaps it. Wraps `kill(2)`, `waitpid(2)`.
    public static func terminate(_ pid: ProcessID) {
        guard kill(pid.rawValue, SIGTERM) == 0 else { return }
        _ = try? wait(pid)
    }

    /// Sends `signal` to child `pid`. Wraps `kill(2)`.
    public static func signal(_ pid: ProcessID, _ signal: Int32) throws(Errno) {
        _ = try checked { kill(pid.rawValue, signal) }
    }

    public static func wait(_ pid: ProcessID) throws(Errno) -> WaitStatus {
        var status: Int32 = 0
        _ = try retryingInterrupts { waitpid(pid.rawValue, &status, 0) }
        return WaitStatus(raw: status)
    }

    /// Like `wait`, but returns `nil` at once if `pid` is still running.
    /// Wraps `waitpid(2)` with `WNOHANG`.
    public static func poll(_ pid: ProcessID) throws(Errno) -> WaitStatus? {
        var status: Int32 = 0
        let result = try checked { waitpid(pid.rawValue, &status, WNOHANG) }
        return result == 0 ? nil : WaitStatus(raw: status)
    }
}
