import PurgeCore
import PurgeSys

/// `purgefs unmount MOUNTPOINT`: unmounts a purgefs mount, and only a
/// purgefs mount, then waits until the kernel's mount table no longer lists it.
struct UnmountCommand: Subcommand {
    static let name = "unmount"
    static let abstract = "Unmount a purgefs mount and wait until it is gone"
    static let help = """
        Usage: purgefs unmount [--force] MOUNTPOINT

        \(TextLayout.paragraph(
            "Unmounts the purgefs mount at MOUNTPOINT (with umount2 as root, else with fusermount3 -u) and "
            + "returns once the mount is gone from /proc/self/mountinfo and its daemon has ended, so the "
            + "container can be mounted again at once (at most \(deadlineMilliseconds / 1000) s, else one line "
            + "says which is still there). Refuses any path that is not a purgefs mount (type fuse.purgefs). Works on a mount "
            + "whose daemon has died."))

        \(TextLayout.paragraph(
            "With --force, a mount that cannot simply be unmounted (busy, or its daemon dead or not answering "
            + "within \(probeMilliseconds / 1000) s) has its FUSE connection aborted through "
            + "/sys/fs/fuse/connections (mounting fusectl if needed), so every process waiting on it gets an "
            + "error instead of hanging, and is then detached. Needs root."))

        Flags:
        \(TextLayout.row("--force", "abort the connection of a mount that does not unmount, then detach it"))
        \(TextLayout.row("-h, --help", "show this help"))
        """

    var pathArgument: String
    var force = false
    /// Set by `validate()`: the absolute mountpoint and the mount to remove.
    private(set) var mountpoint = ""
    private(set) var mount: MountTable.Entry?

    /// How long to wait for the mount to leave the table after unmounting.
    static let deadlineMilliseconds = 10_000
    /// How long a daemon may take to answer a `statfs` before it counts as hung.
    static let probeMilliseconds = 3_000

    init(parsing arguments: [String]) throws(CommandExit) {
        var paths: [String] = []
        var pathsOnly = false
        var force = false
        for argument in arguments {
            if pathsOnly || argument == "-" || !argument.hasPrefix("-") {
                paths.append(argument)
            } else if argument == "--" {
                pathsOnly = true
            } else if argument == "--force" {
                force = true
            } else if argument == "-h" || argument == "--help" {
                throw .help(Self.help)
            } else {
                throw .usage("unmount: unknown flag '\(argument)' (see purgefs unmount --help)")
            }
        }
        guard let path = paths.first, !path.isEmpty else { throw .usage("unmount: MOUNTPOINT is missing (see purgefs unmount --help)") }
        if paths.count > 1 { throw .usage("unmount: unexpected argument '\(paths[1])'; give one MOUNTPOINT") }
        pathArgument = path
        self.force = force
    }

    mutating func validate() throws(CommandExit) {
        // realpath fails with ENOTCONN on a mount whose daemon died; that
        // mount must still be removable, so fall back to the lexical path.
        let canonical = Result { () throws(Errno) in try Paths.canonical(pathArgument) }
        mountpoint = (try? canonical.get()) ?? Self.absolutePath(pathArgument)
        let table: MountTable
        do throws(Errno) {
            table = try MountTable.current()
        } catch {
            throw .failure("cannot read /proc/self/mountinfo: \(error)")
        }
        guard let top = table.topmost(at: mountpoint) else {
            if case .failure(.noEntry) = canonical { throw .failure("\(mountpoint) does not exist") }
            throw .failure("\(mountpoint) is not a mount point")
        }
        guard top.isPurgefs else {
            throw .failure("\(mountpoint) is a \(top.fileSystemType) mount, not a purgefs mount")
        }
        mount = top
    }

    func run(_ context: CommandContext) throws(CommandExit) {
        guard let mount else { preconditionFailure("run() before validate()") }
        if force {
            try forceUnmount(mount)
            try Self.waitUntilGone(mount, deadline: Deadline(milliseconds: Self.deadlineMilliseconds))
            return
        }
        // Who serves it, asked before it goes: its runtime record goes with it.
        let daemon = (try? RuntimeRecordLocator.record(of: mount, at: mountpoint)).flatMap { record in
            let pid = ProcessID(rawValue: record.processID)
            return pid.status.map { (pid, $0.startTime) }
        }
        if CurrentProcess.effectiveUserID == 0 {
            do throws(Errno) {
                try Paths.unmount(mountpoint)
            } catch {
                throw .failure(error == .busy
                    ? "\(mountpoint) is busy: " + (FuseConnection.daemonAnswers(at: mountpoint, within: Self.probeMilliseconds)
                        ? "a process has a file open or its working directory inside"
                        : "its daemon is not answering (purgefs unmount --force \(mountpoint) aborts its connection)")
                    : "cannot unmount \(mountpoint): \(error)")
            }
        } else {
            try Self.fusermountUnmount(mountpoint)
        }
        let deadline = Deadline(milliseconds: Self.deadlineMilliseconds)
        try Self.waitUntilGone(mount, deadline: deadline)
        // The daemon lets go of the container (its state lock) only when it
        // ends: returning before would refuse a `purgefs mount` run next.
        if let (pid, started) = daemon {
            try Self.waitForEnd(of: pid, startedAt: started, serving: mountpoint, deadline: deadline)
        }
    }

    /// `--force`: a mount that does not simply unmount (busy, or its daemon
    /// dead or hung) has its connection aborted first, so that no process
    /// stays stuck on it, and is then detached.
    private func forceUnmount(_ mount: MountTable.Entry) throws(CommandExit) {
        guard CurrentProcess.effectiveUserID == 0 else {
            throw .failure("unmount --force needs root (it writes to /sys/fs/fuse/connections)")
        }
        if FuseConnection.daemonAnswers(at: mountpoint, within: Self.probeMilliseconds), (try? Paths.unmount(mountpoint)) != nil {
            return
        }
        guard let number = mount.deviceMinor else {
            throw .failure("cannot tell the FUSE connection of \(mountpoint) from /proc/self/mountinfo")
        }
        do throws(Errno) {
            try FuseConnection(number: number).abort()
        } catch where error != .noEntry {
            throw .failure("cannot abort the FUSE connection \(number) of \(mountpoint): \(error)")
        } catch {}  // gone already: the kernel aborted it when the daemon's last descriptor closed
        do throws(Errno) { try Paths.detach(mountpoint) } catch {
            throw .failure("cannot detach \(mountpoint): \(error)")
        }
    }

    /// Runs `fusermount3 -u -- MOUNTPOINT`; its complaint, if any, becomes our one line.
    private static func fusermountUnmount(_ mountpoint: String) throws(CommandExit) {
        let child: PipedChild
        do throws(PipedChild.Failure) {
            child = try PipedChild.start("fusermount3", arguments: ["fusermount3", "-u", "--", mountpoint],
                                         environment: CurrentProcess.environment, pipeAs: .standardError, searchPath: true)
        } catch {
            switch error {
            case .pipe(let error): throw .failure("cannot create a pipe: \(error)")
            case .spawn(let error): throw .failure("cannot run fusermount3: \(error)")
            }
        }
        defer { child.output.closeQuietly() }
        let output = (try? child.output.readAll(limit: 65536)) ?? []
        let status: WaitStatus
        do throws(Errno) {
            status = try ChildProcess.wait(child.pid)
        } catch {
            throw .failure("cannot wait for fusermount3: \(error)")
        }
        guard status.exitCode != 0 else { return }
        let lastLine = String(decoding: output, as: UTF8.self).split(whereSeparator: \.isNewline).last.map(String.init)
        let reason = lastLine.map { $0.hasPrefix("fusermount3: ") ? String($0.dropFirst("fusermount3: ".count)) : $0 }
        throw .failure("cannot unmount \(mountpoint): " + (reason ?? "fusermount3 \(status)"))
    }

    /// Polls the mount table until `mount` (by ID) is gone, against `deadline`.
    private static func waitUntilGone(_ mount: MountTable.Entry, deadline: Deadline) throws(CommandExit) {
        while let table = try? MountTable.current(), table.contains(id: mount.id) {
            guard !deadline.hasPassed else {
                throw .failure("\(mount.mountPoint) is still mounted \(deadlineMilliseconds / 1000) s after unmounting")
            }
            CurrentProcess.sleep(milliseconds: 10)
        }
    }

    /// Polls until the daemon `pid` has ended, against `deadline`.
    private static func waitForEnd(of pid: ProcessID, startedAt started: UInt64, serving mountpoint: String,
                                   deadline: Deadline) throws(CommandExit) {
        while !pid.hasEnded(startedAt: started) {
            guard !deadline.hasPassed else {
                throw .failure("\(mountpoint) is unmounted, but its daemon (pid \(pid)) has not ended "
                    + "\(deadlineMilliseconds / 1000) s later: it still holds the container, so a new mount of it is refused")
            }
            CurrentProcess.sleep(milliseconds: 10)
        }
    }

    /// An absolute path without touching the named file: for a mountpoint
    /// whose daemon died, where `realpath` fails with `ENOTCONN`.
    static func absolutePath(_ path: String) -> String {
        let joined = path.hasPrefix("/") ? path : ((try? Paths.workingDirectory()) ?? "/") + "/" + path
        return AbsolutePath.normalise(joined) ?? joined
    }
}
