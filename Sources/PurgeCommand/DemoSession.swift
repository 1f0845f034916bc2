import Glibc
import PurgeCore
import PurgeSys

/// The demo's scratch directory and what it has mounted there: runs the
/// `purgefs` subcommands of the tour as children of this very binary, and
/// takes everything down again however the tour ended.
///
/// The demo works inside its directory (it is the working directory), so the
/// commands it shows and runs name `container` and `mnt` as a user would.
final class DemoSession {
    /// The canonical scratch directory, `$TMPDIR/purgefs-demo.XXXXXX`.
    let base: String
    let transcript: DemoTranscript
    /// The names, relative to `base`, that commands use.
    static let container = "container", mountpoint = "mnt"
    var containerPath: String { base + "/" + Self.container }
    var mountPath: String { base + "/" + Self.mountpoint }
    /// Where a child's stdout and stderr go: a file, never a pipe, since the
    /// daemon that `purgefs mount` starts holds them until it detaches.
    private var outputPath: String { base + "/.output" }

    /// The mount, once `mount()` has seen it in the table.
    private(set) var mount: MountTable.Entry?
    /// The daemon serving it, from its runtime record.
    private(set) var daemon: ProcessID?

    /// How long to wait for the daemon to exit after unmounting, before the
    /// directory is removed anyway.
    static let daemonExitDeadlineMilliseconds = 5_000

    private init(base: String, transcript: DemoTranscript) {
        self.base = base
        self.transcript = transcript
    }

    /// Makes the scratch directory with an empty `container` and `mnt` in
    /// it, and makes it the working directory.
    static func create(transcript: DemoTranscript) throws(CommandExit) -> DemoSession {
        let temporary = CurrentProcess.environmentValue("TMPDIR").flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/tmp"
        let template = (temporary.hasSuffix("/") ? String(temporary.dropLast()) : temporary) + "/purgefs-demo.XXXXXX"
        let base: String
        do throws(Errno) {
            base = try Paths.canonical(try Paths.makeTemporaryDirectory(template))
        } catch {
            throw .failure("demo: cannot create a temporary directory like \(template): \(error)")
        }
        let session = DemoSession(base: base, transcript: transcript)
        do throws(Errno) {
            try Paths.makeDirectory(session.containerPath)
            try Paths.makeDirectory(session.mountPath)
            try CurrentProcess.changeDirectory(base)
        } catch {
            _ = try? Paths.removeTree(base)
            throw .failure("demo: cannot set up \(base): \(error)")
        }
        return session
    }

    /// Throws when a signal asked us to stop, so the tour ends where it is and cleans up.
    func checkInterrupted() throws(CommandExit) {
        guard let signal = TerminationRequests.pending else { return }
        if signal == SIGPIPE { throw .failure("demo: stopped: its output was closed (SIGPIPE)") }
        throw .failure("demo: interrupted by \(TerminationRequests.name(of: signal))")
    }

    // MARK: Running purgefs

    /// Shows `$ purgefs ARGUMENTS`, runs them with this binary, shows what
    /// they printed and returns it; a non-zero exit fails the step.
    @discardableResult
    func purgefs(_ arguments: [String]) throws(CommandExit) -> String {
        try checkInterrupted()
        transcript.command(["purgefs"] + arguments)
        let (status, output) = try run(arguments)
        transcript.output(output)
        try checkInterrupted()
        guard status.exitCode == 0 else {
            let lines = output.split(whereSeparator: \.isNewline)
            let reason = lines.last.map { $0.hasPrefix("purgefs: ") ? String($0.dropFirst(9)) : String($0) } ?? status.description
            throw .failure("demo: purgefs \(arguments.first ?? "") failed: \(reason)")
        }
        return output
    }

    /// Runs `/proc/self/exe ARGUMENTS` in its own process group (Ctrl-C in
    /// the terminal reaches only the demo, which lets the step finish and
    /// then cleans up), stdout and stderr together into a file.
    private func run(_ arguments: [String]) throws(CommandExit) -> (WaitStatus, String) {
        let environment = CurrentProcess.environment.filter { !$0.hasPrefix(ReadySignal.environmentName + "=") }
        do throws(Errno) {
            let output = try FileDescriptor.open(path: outputPath, flags: O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: 0o600)
            let pid: ProcessID
            do throws(Errno) {
                pid = try ChildProcess.spawn(
                    "/proc/self/exe", arguments: ["purgefs"] + arguments, environment: environment,
                    fileActions: [.open("/dev/null", as: .standardInput, flags: OpenFlags.readOnly),
                                  .duplicate(output, to: .standardOutput), .duplicate(output, to: .standardError)],
                    ownProcessGroup: true)
            } catch {
                output.closeQuietly()
                throw error
            }
            output.closeQuietly()
            let status = try ChildProcess.wait(pid)
            let text = String(decoding: try FileDescriptor.readFile(outputPath, limit: 1 << 20), as: UTF8.self)
            return (status, text)
        } catch {
            throw .failure("demo: cannot run purgefs \(arguments.first ?? ""): \(error)")
        }
    }

    // MARK: Mounting

    /// `purgefs mount container mnt -o OPTIONS`: returns once the mount is
    /// usable, and notes it and its daemon for `tearDown`.
    func mountSample(options: String) throws(CommandExit) {
        try purgefs(["mount", Self.container, Self.mountpoint, "-o", options])
        guard let entry = Self.purgefsMount(at: mountPath) else {
            throw .failure("demo: purgefs mount returned, but \(mountPath) is not a purgefs mount")
        }
        mount = entry
        daemon = (try? RuntimeRecordLocator.record(of: entry, at: mountPath)).map { ProcessID(rawValue: $0.processID) }
    }

    /// The topmost mount at `path` when it is a purgefs mount.
    static func purgefsMount(at path: String) -> MountTable.Entry? {
        guard let top = (try? MountTable.current())?.topmost(at: path), top.isPurgefs else { return nil }
        return top
    }

    // MARK: Taking it all down

    /// Unmounts what is mounted on `mnt` (also a mount the tour did not get
    /// to see), waits for the daemon to end, and removes the directory, or,
    /// with `keep`, everything but the container. Returns what could not be
    /// done, as one line, or `nil`.
    func tearDown(keep: Bool) -> String? {
        try? CurrentProcess.changeDirectory("/")
        if let problem = unmountWhateverIsMounted() { return problem }
        waitForTheDaemon()
        do throws(Errno) {
            if keep {
                try Self.removeWithPatience(outputPath, missingIsFine: true)
                try Self.removeWithPatience(mountPath, missingIsFine: true)
            } else {
                try Self.removeWithPatience(base, missingIsFine: false)
            }
        } catch {
            return "demo: cannot remove \(keep ? "the mount point in " : "")\(base): \(error)"
        }
        return nil
    }

    /// As `purgefs unmount` does; if that fails (a process still has a file
    /// open in the mount), detaches it lazily, so nothing is left mounted.
    private func unmountWhateverIsMounted() -> String? {
        guard Self.purgefsMount(at: mountPath) != nil else { return nil }
        if daemon == nil, let entry = Self.purgefsMount(at: mountPath) {
            daemon = (try? RuntimeRecordLocator.record(of: entry, at: mountPath)).map { ProcessID(rawValue: $0.processID) }
        }
        var firstProblem: String?
        do throws(CommandExit) {
            var command = try UnmountCommand(parsing: [mountPath])
            try command.validate()
            try command.run(CommandContext(readySignal: nil))
        } catch {
            if case .failure(let line) = error { firstProblem = line }
            detachLazily()
        }
        guard Self.purgefsMount(at: mountPath) == nil else {
            return "demo: \(mountPath) is still mounted (\(firstProblem ?? "unmount failed")); left \(base) in place"
        }
        transcript.note("(Cleaning up: unmounted \(mountPath).)")
        return nil
    }

    private func detachLazily() {
        if CurrentProcess.effectiveUserID == 0 {
            try? Paths.detach(mountPath)
            return
        }
        guard let pid = try? ChildProcess.spawn(
            "fusermount3", arguments: ["fusermount3", "-u", "-z", "--", mountPath], environment: CurrentProcess.environment,
            fileActions: [.open("/dev/null", as: .standardInput, flags: OpenFlags.readOnly),
                          .open("/dev/null", as: .standardOutput, flags: OpenFlags.writeOnly),
                          .open("/dev/null", as: .standardError, flags: OpenFlags.writeOnly)],
            searchPath: true, ownProcessGroup: true) else { return }
        _ = try? ChildProcess.wait(pid)
    }

    /// The daemon finishes on its own once unmounted, saving its state into
    /// the container: wait for that (against a deadline) before removing it.
    private func waitForTheDaemon() {
        guard let daemon else { return }
        var waited = 0
        while daemon.isRunning, waited < Self.daemonExitDeadlineMilliseconds {
            CurrentProcess.sleep(milliseconds: 10)
            waited += 10
        }
    }

    /// `Paths.removeTree`, tried again for a moment while something still
    /// writes into the tree (`ENOTEMPTY`).
    private static func removeWithPatience(_ path: String, missingIsFine: Bool) throws(Errno) {
        var waited = 0
        while true {
            do throws(Errno) {
                try Paths.removeTree(path)
                return
            } catch {
                if error == .noEntry && missingIsFine { return }
                guard error == .notEmpty, waited < 2_000 else { throw error }
                CurrentProcess.sleep(milliseconds: 20)
                waited += 20
            }
        }
    }
}
