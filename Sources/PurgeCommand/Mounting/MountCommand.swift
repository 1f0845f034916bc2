import Glibc
import PurgeCore
import PurgeEngines
import PurgeFS
import PurgeSys

/// `purgefs mount CONTAINER [MOUNTPOINT] [-f] [-o OPT[,OPT...]]`, and the
/// mount.fuse3 form `purgefs CONTAINER MOUNTPOINT -o OPTS`.
struct MountCommand: Subcommand {
    static let name = "mount"
    static let abstract = "Mount a container at a mountpoint, or in place over itself"
    static var help: String { MountHelp.text }

    /// Read by `init(parsing:)`'s own loop, where `-o` may come between the
    /// paths and `-f` may repeat (the mount.fuse3 form).
    static let flags = FlagTable<Self>(name, [
        .switch(["-f", "--foreground"], \.foreground, "serve in this process until unmounted; errors stay on stderr"),
        .helpRow(OptionArguments.term, "mount options; -o may repeat, -oOPTS works too; "
                 + "when an option is given twice the last one wins"),
    ])

    /// As typed; resolved by `validate()`.
    var containerArgument = ""
    var mountpointArgument: String?
    var foreground = false
    /// Every `-o` argument as typed, kept to hand to the daemon unchanged.
    var optionArguments: [String] = []
    var options = MountOptions()

    /// Canonical absolute paths, set by `validate()`.
    private(set) var container = ""
    private(set) var mountpoint = ""

    init(parsing arguments: [String]) throws(CommandExit) {
        try self.init(parsing: arguments, requireMountpoint: false)
    }

    /// Sets what `validate()` would resolve, for tests that do not touch the system.
    mutating func setResolvedPathsForTesting(container: String, mountpoint: String) {
        self.container = container
        self.mountpoint = mountpoint
    }

    /// `requireMountpoint`: the mount.fuse3 form, where both paths are given.
    init(parsing arguments: [String], requireMountpoint: Bool) throws(CommandExit) {
        var paths: [String] = []
        var optionArguments: [String] = []
        var index = 0
        var pathsOnly = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if pathsOnly || argument == "-" || !argument.hasPrefix("-") {
                paths.append(argument)
                continue
            }
            if let option = try OptionArguments.value(of: argument, in: arguments, at: &index,
                                                      missing: "-o needs an option list, as in -o capacity=1G") {
                optionArguments.append(option)
                continue
            }
            switch argument {
            case "--": pathsOnly = true
            case "-h", "--help": throw .help(Self.help)
            default:
                guard let flag = Self.flags.flag(named: argument) else {
                    throw .usage("mount: unknown flag '\(argument)' (see purgefs mount --help)")
                }
                try flag.apply(&self, FlagValue(command: Self.name, flag: argument, text: ""))
            }
        }
        guard let container = paths.first else { throw .usage("mount: CONTAINER is missing (see purgefs mount --help)") }
        if paths.count > 2 { throw .usage("mount: unexpected argument '\(paths[2])'; give CONTAINER and at most one MOUNTPOINT") }
        if requireMountpoint && paths.count < 2 {
            throw .usage("\(container): give both CONTAINER and MOUNTPOINT, or use purgefs mount CONTAINER to mount in place")
        }
        if paths.contains("") { throw .usage("mount: an empty path was given") }
        do throws(OptionError) {
            options = try MountOptions.parse(optionArguments)
        } catch {
            throw .usage(error.description)
        }
        self.containerArgument = container
        self.mountpointArgument = paths.count > 1 ? paths[1] : nil
        self.optionArguments = optionArguments
    }

    mutating func validate() throws(CommandExit) {
        container = try Self.resolveDirectory(containerArgument, role: "container")
        mountpoint = try Self.resolveDirectory(mountpointArgument ?? containerArgument, role: "mountpoint")
        do throws(OptionError) {
            try Self.resolvingStores(options).validate(containerPath: container)
            // On the real device, the device's rule needs its size.
            if options.capacity == nil, let size = Self.deviceSize(of: container) {
                try CapacityModel(options: options).validate(deviceSize: size)
            }
        } catch {
            throw .usage(error.description)
        }
        // The daemon loads it again at mount; a bad file is refused here, before anything is mounted.
        if let faults = options.faults {
            do throws(MountError) { _ = try FaultRulesFile.load(faults) } catch { throw .failure(error.description) }
        }
        if let inside = AbsolutePath.relative(mountpoint, to: container), !inside.isEmpty {
            throw .failure("mountpoint \(mountpoint) is inside the container \(container): the mount would contain itself")
        }
        if let table = try? MountTable.current() {
            // One daemon per container, and no container inside another. The
            // daemon checks again under its state directory's lock (StateLock).
            if let (other, overlap) = table.purgefsMount(overlapping: container) {
                throw .failure(Self.refusal(container: container, other, overlap))
            }
            if let top = table.topmost(at: mountpoint), top.isPurgefs {
                throw .failure("\(mountpoint) is already a purgefs mount\(Self.daemonNote(top)) (purgefs unmount \(mountpoint) first)")
            }
            if let enclosing = table.purgefsMount(containing: container) {
                throw .failure("container \(container) is inside the purgefs mount at \(enclosing.mountPoint)\(Self.daemonNote(enclosing)) "
                    + "of \(enclosing.source): a container inside a mounted one cannot be mounted")
            }
        }
    }

    /// `options` with `cloud=` and `state=` as real paths (symlinks resolved,
    /// what is not made yet appended), for comparing with the container's;
    /// the daemon is given them as typed.
    static func resolvingStores(_ options: MountOptions) -> MountOptions {
        var resolved = options
        if case .directory(let cloud)? = options.cloud { resolved.cloud = .directory(Paths.canonicalAllowingMissing(cloud)) }
        if let state = options.stateDirectory { resolved.stateDirectory = Paths.canonicalAllowingMissing(state) }
        return resolved
    }

    /// Why `container` cannot be mounted beside the mount `other`.
    static func refusal(container: String, _ other: MountTable.Entry, _ overlap: MountTable.Overlap) -> String {
        let mount = "\(other.mountPoint)\(daemonNote(other))"
        switch overlap {
        case .same:
            return "container \(container) is already mounted at \(mount): one daemon per container (purgefs unmount \(other.mountPoint) first)"
        case .inside:
            return "container \(container) is inside the container \(other.source), mounted at \(mount): a container inside a mounted one cannot be mounted"
        case .holds:
            return "container \(container) holds the container \(other.source), mounted at \(mount): a container holding a mounted one cannot be mounted"
        }
    }

    /// ` (pid N)`: the daemon serving `mount`, when its runtime record says
    /// (waiting briefly for a daemon that has just mounted); a daemon killed
    /// without unmounting has left its mount behind.
    private static func daemonNote(_ mount: MountTable.Entry) -> String {
        guard let record = try? RuntimeRecordLocator.record(of: mount, at: mount.mountPoint) else { return "" }
        guard ProcessID(rawValue: record.processID).isRunning else {
            return " (its daemon, pid \(record.processID), is gone: purgefs unmount \(mount.mountPoint))"
        }
        return " (pid \(record.processID))"
    }

    func run(_ context: CommandContext) throws(CommandExit) {
        if foreground {
            try serve(readySignal: context.readySignal)
        } else {
            try DaemonLauncher.launch(arguments: daemonArguments)
        }
    }

    /// The daemon's command line: this mount in the foreground, with the
    /// resolved paths and the `-o` arguments exactly as typed.
    var daemonArguments: [String] {
        ["purgefs", Self.name, "-f"] + optionArguments.flatMap { ["-o", $0] } + ["--", container, mountpoint]
    }

    /// Serves until unmounted. As a daemon child, reports ready through the
    /// pipe and then lets go of the caller's terminal (see `StandardStreams`).
    private func serve(readySignal: ReadySignal?) throws(CommandExit) {
        let request = MountRequest(container: container, mountpoint: mountpoint, options: options)
        do throws(MountError) {
            try FileSystemServer.serve(request, whenReady: { (log: FileDescriptor) in
                if let readySignal {
                    if readySignal.sendReady() { StandardStreams.detach(stderrTo: log) }
                } else {
                    try? FileDescriptor.standardOutput.writeAll(readyLine + "\n")
                }
                ServiceManager.notify("READY=1\nSTATUS=\(statusText)\nMAINPID=\(CurrentProcess.id.rawValue)")
            })
        } catch {
            throw .failure(Self.withoutProgramPrefix(error.description))
        }
        ServiceManager.notify("STOPPING=1\nSTATUS=unmounted \(mountpoint)")
    }

    /// The one line `mount -f` prints on stdout once the mount is usable.
    var readyLine: String {
        "purgefs: mounted \(container) at \(mountpoint), serving in the foreground (pid \(CurrentProcess.id.rawValue)); "
            + "purgefs unmount \(mountpoint) to stop"
    }

    /// The service manager's status line (`systemctl status`).
    var statusText: String {
        container == mountpoint ? "serving \(container) in place" : "serving \(container) at \(mountpoint)"
    }

    /// `MountError` lines are shown after our own `purgefs: `; drop a repeated one.
    static func withoutProgramPrefix(_ line: String) -> String {
        line.hasPrefix("purgefs: ") ? String(line.dropFirst("purgefs: ".count)) : line
    }

    /// The size of the filesystem holding `path` (`statvfs`), as the daemon
    /// takes it for a real device; `nil` if it cannot be read, or says 0
    /// (pseudo filesystems), as the daemon takes it then.
    private static func deviceSize(of path: String) -> UInt64? {
        guard let directory = try? FileDescriptor.open(path: path, flags: OpenFlags.path | O_DIRECTORY) else { return nil }
        defer { directory.closeQuietly() }
        guard let figures = try? directory.fileSystemStatus() else { return nil }
        let size = UInt64(figures.f_blocks) * UInt64(figures.f_frsize)
        return size > 0 ? size : nil
    }

    /// The canonical path of an existing directory, or a one-line reason.
    static func resolveDirectory(_ path: String, role: String) throws(CommandExit) -> String {
        func reason(_ error: Errno) -> CommandExit {
            error == .notConnected
                ? .failure("\(role) \(path): \(error) (a purgefs daemon that died? purgefs unmount \(path))")
                : .failure("\(role) \(path): \(error)")
        }
        let resolved: String, isDirectory: Bool
        do throws(Errno) {
            resolved = try Paths.canonical(path)
            isDirectory = try Paths.isDirectory(resolved)
        } catch {
            throw reason(error)
        }
        guard isDirectory else { throw .failure("\(role) \(path) is not a directory") }
        return resolved
    }
}
