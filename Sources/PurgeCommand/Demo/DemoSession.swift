import Glibc
import PurgeCore
import PurgeEngines
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

    private init(base: String, transcript: DemoTranscript) {
        self.base = base
        self.transcript = transcript
    }

    /// Makes the scratch directory with an empty `container` and `mnt` in
    /// it, and makes it the working directory.
    static func create(transcript: DemoTranscript) throws(CommandExit) -> DemoSession {
        let base = try OwnMount.scratchDirectory("purgefs-demo")
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
            throw .failure("demo: purgefs \(arguments.first ?? "") failed: \(OwnMount.reason(output, status))")
        }
        return output
    }

    /// Runs `/proc/self/exe ARGUMENTS` in its own process group (Ctrl-C in
    /// the terminal reaches only the demo, which lets the step finish and
    /// then cleans up), stdout and stderr together into a file.
    private func run(_ arguments: [String]) throws(CommandExit) -> (WaitStatus, String) {
        do throws(Errno) {
            return try OwnMount.purgefs(arguments, outputPath: outputPath)
        } catch {
            throw .failure("demo: cannot run purgefs \(arguments.first ?? ""): \(error)")
        }
    }

    // MARK: Mounting

    /// `purgefs mount container mnt -o OPTIONS`: returns once the mount is
    /// usable, and notes it and its daemon for `tearDown`.
    func mountSample(options: String) throws(CommandExit) {
        try purgefs(["mount", Self.container, Self.mountpoint, "-o", options])
        guard let entry = OwnMount.purgefsMount(at: mountPath) else {
            throw .failure("demo: purgefs mount returned, but \(mountPath) is not a purgefs mount")
        }
        mount = entry
        daemon = (try? RuntimeRecordLocator.record(of: entry, at: mountPath)).map { ProcessID(rawValue: $0.processID) }
    }

    // MARK: Taking it all down

    /// Unmounts what is mounted on `mnt` (also a mount the tour did not get
    /// to see), waits for the daemon to end, and removes the directory, or,
    /// with `keep`, everything but the container. Returns what could not be
    /// done, as one line, or `nil`.
    func tearDown(keep: Bool) -> String? {
        try? CurrentProcess.changeDirectory("/")
        if let problem = unmountWhateverIsMounted() { return problem }
        OwnMount.waitForExit(daemon)
        do throws(Errno) {
            if keep {
                try OwnMount.removeWithPatience(outputPath, missingIsFine: true)
                try OwnMount.removeWithPatience(mountPath, missingIsFine: true)
            } else {
                try OwnMount.removeWithPatience(base, missingIsFine: false)
            }
        } catch {
            return "demo: cannot remove \(keep ? "the mount point in " : "")\(base): \(error)"
        }
        return nil
    }

    /// Unmounts (also a mount the tour did not get to see), or says why not.
    private func unmountWhateverIsMounted() -> String? {
        guard OwnMount.purgefsMount(at: mountPath) != nil else { return nil }
        if daemon == nil { daemon = OwnMount.daemon(at: mountPath) }
        if let problem = OwnMount.unmount(mountPath) { return "demo: \(problem); left \(base) in place" }
        transcript.note("(Cleaning up: unmounted \(mountPath).)")
        return nil
    }
}
