import PurgeSys
import Synchronization

/// The daemon's half of the ready pipe.
///
/// `purgefs mount` without `-f` re-executes itself with `-f` and the write
/// end of a pipe as descriptor `PURGEFS_READY_FD`. The daemon writes exactly
/// one line on it: `ok` once the mount is usable, or `error: <reason>` if it
/// cannot mount; then it closes it. The parent (`DaemonLauncher`) waits for
/// that line, so `purgefs mount` returns only when the mount works or with
/// the reason it does not.
public final class ReadySignal: Sendable {
    /// The environment variable that carries the descriptor number.
    public static let environmentName = "PURGEFS_READY_FD"

    /// The descriptor the daemon inherits the pipe as.
    public static let descriptor = FileDescriptor(rawValue: 3)

    /// The pipe, until the one line has been written.
    private let fd: Mutex<FileDescriptor?>

    private init(fd: FileDescriptor) { self.fd = Mutex(fd) }

    /// The signal this process was started with, if it is a daemon child.
    /// Takes it out of the environment (so no grandchild inherits it), marks
    /// the descriptor close-on-exec (so a `fusermount3` the adapter spawns
    /// cannot hold the pipe open after the daemon dies), and detaches the
    /// daemon: a new session without a controlling terminal, and `/` as its
    /// working directory so it keeps no directory busy.
    public static func takeFromEnvironment() -> ReadySignal? {
        guard let text = CurrentProcess.environmentValue(environmentName) else { return nil }
        try? CurrentProcess.removeEnvironmentValue(environmentName)
        guard let number = Int32(text), number >= 0 else { return nil }
        let fd = FileDescriptor(rawValue: number)
        do { try fd.setCloseOnExec() } catch { return nil }
        try? CurrentProcess.startSession()
        try? CurrentProcess.changeDirectory("/")
        return ReadySignal(fd: fd)
    }

    /// Sends `ok`. Returns false if a line was already sent.
    @discardableResult
    public func sendReady() -> Bool { send("ok\n") }

    /// Sends `error: <reason>` (one line). Returns false if a line was already sent.
    @discardableResult
    public func sendFailure(_ reason: String) -> Bool {
        send("error: " + reason.split(whereSeparator: \.isNewline).joined(separator: " ") + "\n")
    }

    private func send(_ line: String) -> Bool {
        fd.withLock { fd in
            guard let open = fd else { return false }
            try? open.writeAll(line)
            open.closeQuietly()
            fd = nil
            return true
        }
    }
}
