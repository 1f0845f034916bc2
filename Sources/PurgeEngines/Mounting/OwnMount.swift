import Glibc
import PurgeCore
import PurgeSys

/// What `demo` and `run` share: running subcommands of this very binary as
/// children with their output captured, and taking down a mount they made
/// however they ended (unmount, else detach; wait for the daemon; remove
/// the scratch directory).
public enum OwnMount {
    /// Runs `/proc/self/exe ARGUMENTS` in its own process group (Ctrl-C in
    /// the terminal reaches only us, which lets the step finish and then
    /// cleans up), stdin on `/dev/null`, stdout and stderr together into
    /// the file `outputPath` (never a pipe: the daemon that `purgefs mount`
    /// starts holds them until it detaches). Returns how it ended and what it printed.
    public static func purgefs(_ arguments: [String], outputPath: String) throws(Errno) -> (WaitStatus, String) {
        try capture("/proc/self/exe", arguments: ["purgefs"] + arguments, outputPath: outputPath)
    }

    /// Runs `path` (looked up in `$PATH` when it has no `/`) as `purgefs` does.
    public static func capture(_ path: String, arguments: [String], outputPath: String) throws(Errno) -> (WaitStatus, String) {
        let environment = CurrentProcess.environment.filter { !$0.hasPrefix(ReadySignal.environmentName + "=") }
        let output = try FileDescriptor.open(path: outputPath, flags: O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: 0o600)
        let pid: ProcessID
        do throws(Errno) {
            pid = try ChildProcess.spawn(
                path, arguments: arguments, environment: environment,
                fileActions: [.open("/dev/null", as: .standardInput, flags: OpenFlags.readOnly),
                              .duplicate(output, to: .standardOutput), .duplicate(output, to: .standardError)],
                searchPath: !path.contains("/"), ownProcessGroup: true)
        } catch {
            output.closeQuietly()
            throw error
        }
        output.closeQuietly()
        let status = try ChildProcess.wait(pid)
        let text = String(decoding: try FileDescriptor.readFile(outputPath, limit: 1 << 20), as: UTF8.self)
        return (status, text)
    }

    /// The reason in a failed child's output: its last line without `purgefs: `.
    public static func reason(_ output: String, _ status: WaitStatus) -> String {
        let lines = output.split(whereSeparator: \.isNewline)
        return lines.last.map { $0.hasPrefix("purgefs: ") ? String($0.dropFirst(9)) : String($0) } ?? status.description
    }

    /// The topmost mount at `path` when it is a purgefs mount.
    public static func purgefsMount(at path: String) -> MountTable.Entry? {
        guard let top = (try? MountTable.current())?.topmost(at: path), top.isPurgefs else { return nil }
        return top
    }

    /// The daemon serving the purgefs mount at `path`, from its runtime record.
    public static func daemon(at path: String) -> ProcessID? {
        guard let entry = purgefsMount(at: path) else { return nil }
        return (try? RuntimeRecordLocator.record(of: entry, at: path)).map { ProcessID(rawValue: $0.processID) }
    }

    /// As `purgefs unmount` does; if that fails (a process still has a file
    /// open in the mount), detaches it lazily, so nothing is left mounted.
    /// Returns what went wrong, as one line, when the mount is still there.
    public static func unmount(_ path: String) -> String? {
        guard purgefsMount(at: path) != nil else { return nil }
        var firstProblem: String?
        do throws(CommandExit) {
            let (mountpoint, mount) = try MountRemoval.find(path)
            try MountRemoval.remove(mount, at: mountpoint, force: false)
        } catch {
            if case .failure(let line) = error { firstProblem = line }
            detachLazily(path)
        }
        guard purgefsMount(at: path) == nil else { return "\(path) is still mounted (\(firstProblem ?? "unmount failed"))" }
        return nil
    }

    private static func detachLazily(_ path: String) {
        if CurrentProcess.effectiveUserID == 0 {
            try? Paths.detach(path)
            return
        }
        guard let pid = try? ChildProcess.spawn(
            "fusermount3", arguments: ["fusermount3", "-u", "-z", "--", path], environment: CurrentProcess.environment,
            fileActions: [.open("/dev/null", as: .standardInput, flags: OpenFlags.readOnly),
                          .open("/dev/null", as: .standardOutput, flags: OpenFlags.writeOnly),
                          .open("/dev/null", as: .standardError, flags: OpenFlags.writeOnly)],
            searchPath: true, ownProcessGroup: true) else { return }
        _ = try? ChildProcess.wait(pid)
    }

    /// How long to wait for the daemon to exit after unmounting.
    static let daemonExitDeadlineMilliseconds = 5_000

    /// The daemon finishes on its own once unmounted, saving its state into
    /// the container: waits for that, against a deadline.
    public static func waitForExit(_ daemon: ProcessID?) {
        guard let daemon else { return }
        var waited = 0
        while daemon.isRunning, waited < daemonExitDeadlineMilliseconds {
            CurrentProcess.sleep(milliseconds: 10)
            waited += 10
        }
    }

    /// `Paths.removeTree`, tried again for a moment while something still
    /// writes into the tree (`ENOTEMPTY`).
    public static func removeWithPatience(_ path: String, missingIsFine: Bool) throws(Errno) {
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

    /// A fresh directory `$TMPDIR/NAME.XXXXXX` (else under /tmp), canonical.
    public static func scratchDirectory(_ name: String) throws(CommandExit) -> String {
        let temporary = CurrentProcess.environmentValue("TMPDIR").flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/tmp"
        let template = (temporary.hasSuffix("/") ? String(temporary.dropLast()) : temporary) + "/\(name).XXXXXX"
        do throws(Errno) {
            return try Paths.canonical(try Paths.makeTemporaryDirectory(template))
        } catch {
            throw .failure("\(name.dropFirst("purgefs-".count)): cannot create a temporary directory like \(template): \(error)")
        }
    }
}
