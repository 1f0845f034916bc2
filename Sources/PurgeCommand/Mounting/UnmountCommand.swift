import PurgeCore
import PurgeEngines
import PurgeSys

/// `purgefs unmount MOUNTPOINT`: unmounts a purgefs mount, and only a
/// purgefs mount, then waits until the kernel's mount table no longer lists it.
struct UnmountCommand: Subcommand {
    static let name = "unmount"
    static let abstract = "Unmount a purgefs mount and wait until it is gone"
    static let help = """
        Usage: purgefs unmount [--force] [--flatten] MOUNTPOINT

        \(TextLayout.paragraph(
            "Unmounts the purgefs mount at MOUNTPOINT (with umount2 as root, else with fusermount3 -u) and "
            + "returns once the mount is gone from /proc/self/mountinfo and its daemon has ended, so the "
            + "container can be mounted again at once (at most \(MountRemoval.deadlineMilliseconds / 1000) s, else one line "
            + "says which is still there). Refuses any path that is not a purgefs mount (type fuse.purgefs). Works on a mount "
            + "whose daemon has died."))

        \(TextLayout.paragraph(
            "With --force, a mount that cannot simply be unmounted (busy, or its daemon dead or not answering "
            + "within \(MountRemoval.probeMilliseconds / 1000) s) has its FUSE connection aborted through "
            + "/sys/fs/fuse/connections (mounting fusectl if needed), so every process waiting on it gets an "
            + "error instead of hanging, and is then detached. Needs root."))

        \(TextLayout.paragraph(
            "With --flatten, every file of the mount that shares data through purgefs is first given data of "
            + "its own (purgefs flatten MOUNTPOINT), so the container holds plain files once unmounted; when "
            + "that fails the mount is left mounted (exit 1)."))

        Flags:
        \(flags.rows)
        """

    /// Read by `init(parsing:)`'s own loop: `--force` may repeat.
    static let flags = FlagTable<Self>(name, [
        .switch("--force", \.force, "abort the connection of a mount that does not unmount, then detach it"),
        .switch("--flatten", \.flatten, "first give every file that shares data through purgefs data of its own"),
    ])

    var pathArgument = ""
    var force = false
    var flatten = false
    /// Set by `validate()`: the absolute mountpoint and the mount to remove.
    private(set) var mountpoint = ""
    private(set) var mount: MountTable.Entry?

    init(parsing arguments: [String]) throws(CommandExit) {
        var paths: [String] = []
        var pathsOnly = false
        for argument in arguments {
            if pathsOnly || argument == "-" || !argument.hasPrefix("-") {
                paths.append(argument)
            } else if argument == "--" {
                pathsOnly = true
            } else if let flag = Self.flags.flag(named: argument) {
                try flag.apply(&self, FlagValue(command: Self.name, flag: argument, text: ""))
            } else if argument == "-h" || argument == "--help" {
                throw .help(Self.help)
            } else {
                throw .usage("unmount: unknown flag '\(argument)' (see purgefs unmount --help)")
            }
        }
        guard let path = paths.first, !path.isEmpty else { throw .usage("unmount: MOUNTPOINT is missing (see purgefs unmount --help)") }
        if paths.count > 1 { throw .usage("unmount: unexpected argument '\(paths[1])'; give one MOUNTPOINT") }
        pathArgument = path
    }

    mutating func validate() throws(CommandExit) {
        (mountpoint, mount) = try MountRemoval.find(pathArgument)
    }

    func run(_ context: CommandContext) throws(CommandExit) {
        guard let mount else { preconditionFailure("run() before validate()") }
        if flatten {
            do throws(CommandExit) {
                print(try Flattening(access: .live).flatten(mountpoint).summary(of: mountpoint))
            } catch {
                guard case .failure(let line) = error else { throw error }
                throw .failure(line + "; \(mountpoint) is still mounted")
            }
        }
        try MountRemoval.remove(mount, at: mountpoint, force: force)
    }
}
