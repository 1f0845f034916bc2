import Glibc

/// Starting and reaping child processes with `posix_spawn`, never `fork`:
/// forking a multithreaded Swift process can leave the child holding locks
/// that no thread will release.
enum ChildProcess {
    /// How to set up the child's descriptors.
    enum FileAction {
        /// `dup2(from, to)` in the child (clears close-on-exec on `to`).
        case duplicate(Int32, to: Int32)
        /// Open `path` as descriptor `fd` in the child.
        case open(String, as: Int32, flags: Int32)
    }

    /// Starts `path` with `arguments` (including argv[0]) and `environment`;
    /// `searchPath` looks `path` up in `$PATH` (`posix_spawnp`). Descriptors
    /// marked close-on-exec stay closed in the child. Wraps `posix_spawn(3)`.
    static func spawn(_ path: String, arguments: [String], environment: [String],
                      fileActions: [FileAction] = [], searchPath: Bool = false) throws(SystemError) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for action in fileActions {
            switch action {
            case .duplicate(let from, let to):
                posix_spawn_file_actions_adddup2(&actions, from, to)
            case .open(let path, let fd, let flags):
                posix_spawn_file_actions_addopen(&actions, fd, path, flags, 0)
            }
        }
        let argv = CStringArray(arguments), envp = CStringArray(environment)
        var pid: pid_t = 0
        let result = argv.withPointer { argvPointer in
            envp.withPointer { envpPointer in
                searchPath
                    ? posix_spawnp(&pid, path, &actions, nil, argvPointer, envpPointer)
                    : posix_spawn(&pid, path, &actions, nil, argvPointer, envpPointer)
            }
        }
        guard result == 0 else { throw SystemError(code: result) }
        return pid
    }

    /// Waits for `pid` to end; retries `EINTR`. Wraps `waitpid(2)`.
    static func wait(_ pid: pid_t) throws(SystemError) -> WaitStatus {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { throw .current }
        }
        return WaitStatus(raw: status)
    }

    /// Like `wait`, but returns `nil` at once if `pid` is still running (`WNOHANG`).
    static func poll(_ pid: pid_t) throws(SystemError) -> WaitStatus? {
        var status: Int32 = 0
        let result = waitpid(pid, &status, WNOHANG)
        if result < 0 { throw .current }
        return result == 0 ? nil : WaitStatus(raw: status)
    }

    /// Marks every open descriptor from `lowest` up close-on-exec, so a
    /// child gets only what its file actions give it. A daemon must not keep
    /// a pipe its caller left open (a test harness's, say): the caller would
    /// wait on it for as long as the daemon lives. Only for a short-lived,
    /// single-threaded caller: it changes this process's descriptors.
    /// (`posix_spawn_file_actions_addclosefrom_np` would do this in the child,
    /// but glibc declares it only under `_GNU_SOURCE`.)
    static func markDescriptorsCloseOnExec(from lowest: Int32) {
        guard let directory = opendir("/proc/self/fd") else { return }
        defer { closedir(directory) }
        let own = dirfd(directory)
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let fd = Int32(name), fd >= lowest, fd != own else { continue }
            let flags = fcntl(fd, F_GETFD)
            if flags >= 0 { _ = fcntl(fd, F_SETFD, flags | FD_CLOEXEC) }
        }
    }

    /// This process's environment as `NAME=value` strings.
    static var currentEnvironment: [String] {
        var result: [String] = []
        guard Int(bitPattern: environ) != 0 else { return result } // NULL after clearenv(3)
        var entry = environ
        while let pointer = entry.pointee {
            result.append(String(cString: pointer))
            entry += 1
        }
        return result
    }
}

/// How a child ended, decoded from a `waitpid` status word. Glibc's
/// `WIFEXITED`-family are macros Swift cannot import; this is their layout
/// on Linux: low 7 bits the signal (0 = exited), next byte the exit code.
struct WaitStatus: Equatable, Sendable, CustomStringConvertible {
    let raw: Int32

    var exitCode: Int32? { raw & 0x7f == 0 ? (raw >> 8) & 0xff : nil }
    var signal: Int32? {
        let low = raw & 0x7f
        return low != 0 && low != 0x7f ? low : nil
    }

    var description: String {
        if let exitCode { return "exited with status \(exitCode)" }
        if let signal {
            let name = strsignal(signal).map { String(cString: $0) } ?? "signal \(signal)"
            return "was killed by signal \(signal) (\(name))"
        }
        return "stopped (wait status \(raw))"
    }
}

/// A NULL-terminated array of C strings for `argv`/`envp`, freed on deinit.
private final class CStringArray {
    private var pointers: [UnsafeMutablePointer<CChar>?]

    init(_ strings: [String]) {
        pointers = strings.map { strdup($0) } + [nil]
    }

    deinit { pointers.forEach { free($0) } }

    func withPointer<Result>(_ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> Result) -> Result {
        pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
