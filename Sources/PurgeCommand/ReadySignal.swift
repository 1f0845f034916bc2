import Glibc
import PurgeCore
import Synchronization

/// The daemon's half of the ready pipe.
///
/// `purgefs mount` without `-f` re-executes itself with `-f` and the write
/// end of a pipe as descriptor `PURGEFS_READY_FD`. The daemon writes exactly
/// one line on it: `ok` once the mount is usable, or `error: <reason>` if it
/// cannot mount; then it closes it. The parent (`DaemonLauncher`) waits for
/// that line, so `purgefs mount` returns only when the mount works or with
/// the reason it does not.
final class ReadySignal: Sendable {
    /// The environment variable that carries the descriptor number.
    static let environmentName = "PURGEFS_READY_FD"

    /// The descriptor the daemon inherits the pipe as.
    static let descriptor: Int32 = 3

    /// The pipe, until the one line has been written.
    private let fd: Mutex<Int32?>

    private init(fd: Int32) { self.fd = Mutex(fd) }

    /// The signal this process was started with, if it is a daemon child.
    /// Takes it out of the environment (so no grandchild inherits it), marks
    /// the descriptor close-on-exec (so a `fusermount3` the adapter spawns
    /// cannot hold the pipe open after the daemon dies), and detaches the
    /// daemon: a new session without a controlling terminal, and `/` as its
    /// working directory so it keeps no directory busy.
    static func takeFromEnvironment() -> ReadySignal? {
        guard let text = getenv(environmentName).map({ String(cString: $0) }) else { return nil }
        unsetenv(environmentName)
        guard let fd = Int32(text), fd >= 0, fcntl(fd, F_SETFD, FD_CLOEXEC) == 0 else { return nil }
        _ = setsid()
        _ = chdir("/")
        return ReadySignal(fd: fd)
    }

    /// Whether `ok` or an error has been sent.
    var isSent: Bool { fd.withLock { $0 == nil } }

    /// Sends `ok`. Returns false if a line was already sent.
    @discardableResult
    func sendReady() -> Bool { send("ok\n") }

    /// Sends `error: <reason>` (one line). Returns false if a line was already sent.
    @discardableResult
    func sendFailure(_ reason: String) -> Bool {
        send("error: " + reason.split(whereSeparator: \.isNewline).joined(separator: " ") + "\n")
    }

    private func send(_ line: String) -> Bool {
        fd.withLock { fd in
            guard let open = fd else { return false }
            try? FileSystemCalls.writeAll(open, line)
            close(open)
            fd = nil
            return true
        }
    }
}

/// Where the daemon's stderr goes once it is detached: `STATE/daemon.log`,
/// opened so that it lands in the backing directory even when the state
/// directory is under the mountpoint (an in-place mount hides it; through
/// the mount it does not exist at all).
struct DaemonLog: Sendable {
    /// A directory descriptor opened before mounting (it keeps pointing at
    /// the directory underneath), and the state directory relative to it.
    private let base: Int32
    private let relativeStatePath: String

    /// Call before mounting. `stateDirectory` and `mountpoint` are absolute.
    init(stateDirectory: String, mountpoint: String) {
        if let inside = AbsolutePath.relative(stateDirectory, to: mountpoint),
           let fd = try? FileSystemCalls.open(mountpoint, flags: O_RDONLY | O_DIRECTORY) {
            base = fd
            relativeStatePath = inside.isEmpty ? "." : inside
        } else {
            base = AT_FDCWD
            relativeStatePath = stateDirectory
        }
    }

    /// Points stdin and stdout at /dev/null and stderr at the log (or
    /// /dev/null if the state directory is missing), so the daemon holds no
    /// terminal or pipe of whoever started it: a caller reading our output
    /// until end of file would otherwise wait for the daemon to exit.
    func redirectStandardStreams() {
        let null = (try? FileSystemCalls.open("/dev/null", flags: O_RDWR)) ?? -1
        let log = openLog()
        if null >= 0 {
            dup2(null, STDIN_FILENO)
            dup2(null, STDOUT_FILENO)
        }
        if let log {
            dup2(log, STDERR_FILENO)
            close(log)
        } else if null >= 0 {
            dup2(null, STDERR_FILENO)
        }
        if null > STDERR_FILENO { close(null) }
        if base >= 0 { close(base) }
    }

    /// `STATE/daemon.log` opened for appending (created 0600), or `nil` if
    /// the state directory is missing.
    func openLog() -> Int32? {
        try? FileSystemCalls.open(relativeStatePath + "/daemon.log",
                                  flags: O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW,
                                  mode: 0o600, relativeTo: base)
    }
}
