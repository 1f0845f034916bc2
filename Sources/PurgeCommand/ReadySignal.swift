import Glibc
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

/// Lets go of whoever started the daemon, once the mount is ready: stdin and
/// stdout to /dev/null, stderr to the daemon log. A caller reading our output
/// until end of file (a script, a test harness) would otherwise wait for as
/// long as the daemon lives.
enum StandardStreams {
    /// `log` is the daemon log the server opened in the state directory
    /// before mounting (an in-place mount hides that path from the daemon);
    /// it stays open and owned by the server.
    static func detach(stderrTo log: Int32) {
        let null = (try? FileSystemCalls.open("/dev/null", flags: O_RDWR)) ?? -1
        if null >= 0 {
            dup2(null, STDIN_FILENO)
            dup2(null, STDOUT_FILENO)
        }
        if log >= 0 {
            dup2(log, STDERR_FILENO)
        } else if null >= 0 {
            dup2(null, STDERR_FILENO)
        }
        if null > STDERR_FILENO { close(null) }
    }
}
