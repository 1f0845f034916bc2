import PurgeCore
import PurgeEngines
import PurgeFS
import PurgeSys

/// The `purgefs` command: routes the arguments to a subcommand, runs it,
/// and turns its outcome into output and an exit status.
public enum Purgefs {
    public static let version = "0.1.0"
    /// What `purgefs --version` prints: `commit` is the commit the binary was
    /// built from, stamped into the executable at build (`unknown` for a
    /// build without git).
    static func versionLine(commit: String) -> String { "purgefs \(version) (commit \(commit))" }

    /// The subcommands that exist. A new one is a file with a `Subcommand`
    /// type, added here.
    static var subcommands: [any Subcommand.Type] {
        [MountCommand.self, UnmountCommand.self, UsageCommand.self, SpaceCommand.self, ManualPurgeCommand.self,
         CloneCommand.self, FlattenCommand.self, PinCommand.self, UnpinCommand.self, EvictCommand.self, DownloadCommand.self, LogCommand.self,
         MetricsCommand.self, DemoCommand.self, FaultCommand.self, RunCommand.self, CrashCommand.self, ReportCommand.self,
         UICommand.self, ExploreCommand.self, CloudCommand.self]
    }

    /// What the command line asks for, decided before anything touches the system.
    enum Route {
        case run(any Subcommand)
        case version
    }

    /// Runs the command line (`arguments` includes argv[0]) and returns the
    /// exit status. `commit`: the commit of the build, for `--version`.
    public static func main(_ arguments: [String], commit: String = "unknown") -> Int32 {
        if arguments.count > 1, arguments[1] == ConnectionGuard.verb {
            return ConnectionGuard.run(Array(arguments.dropFirst(2)))
        }
        let context = CommandContext(readySignal: ReadySignal.takeFromEnvironment())
        do throws(CommandExit) {
            switch try route(Array(arguments.dropFirst()), pathExists: Paths.exists) {
            case .version:
                print(versionLine(commit: commit))
            case .run(var command):
                try command.validate()
                try command.run(context)
            }
            return 0
        } catch {
            switch error {
            case .help(let text):
                print(text)
            case .passOn:
                break
            case .usage(let line), .failure(let line):
                // A daemon child reports through its ready pipe while the parent waits on it.
                if context.readySignal?.sendFailure(line) != true {
                    printError(line)
                }
            }
            return error.status
        }
    }

    /// Chooses the subcommand. The mount.fuse3 form (`purgefs CONTAINER
    /// MOUNTPOINT -o OPTS`) is a first word that is not a command but an
    /// existing path, or that is written as a path (has a `/`): a missing
    /// container in an fstab line is a failure to report, not a usage error.
    static func route(_ arguments: [String], pathExists: (String) -> Bool) throws(CommandExit) -> Route {
        guard let first = arguments.first else {
            throw .usage("a command is missing (see purgefs --help)")
        }
        let rest = Array(arguments.dropFirst())
        switch first {
        case "-h", "--help":
            throw .help(help)
        case "--version", "-V":
            return .version
        case "help":
            guard let topic = rest.first else { throw .help(help) }
            if rest.count > 1 { throw .usage("help: give one command or topic, not '\(rest.joined(separator: " "))'") }
            if topic == AttributesHelp.topic { throw .help(AttributesHelp.text) }
            if topic == "-h" || topic == "--help" { throw .help(help) }
            throw .help(try subcommand(named: topic).help)
        default:
            if let command = subcommands.first(where: { $0.name == first }) {
                return .run(try command.init(parsing: rest))
            }
            if !first.hasPrefix("-"), first.contains("/") || pathExists(first) {
                return .run(try MountCommand(parsing: arguments, requireMountpoint: true))
            }
            if first.hasPrefix("-") { throw .usage("unknown option '\(first)' (see purgefs --help)") }
            throw .usage("unknown command '\(first)' (see purgefs --help)")
        }
    }

    private static func subcommand(named name: String) throws(CommandExit) -> any Subcommand.Type {
        if let command = subcommands.first(where: { $0.name == name }) { return command }
        throw .usage("unknown command or topic '\(name)' (see purgefs --help)")
    }

    static var help: String {
        """
        purgefs \(version): an app container with iOS-like storage semantics, over FUSE

        Usage:
          purgefs mount CONTAINER [MOUNTPOINT] [-f] [-o OPT[,OPT...]]
          purgefs CONTAINER MOUNTPOINT -o OPTS     (the form mount.fuse3 and fstab use)
          purgefs unmount [--force] [--flatten] MOUNTPOINT
          purgefs usage PATH|--device NAME [--json | --html FILE]
          purgefs space MOUNTPOINT [--capacity SIZE] [--external SIZE | --available SIZE] [--json]
          purgefs purge MOUNTPOINT (--bytes SIZE | --all)
          purgefs clone SOURCE DEST
          purgefs flatten MOUNTPOINT [PATH]
          purgefs pin PATH | purgefs unpin PATH
          purgefs evict PATH | purgefs download PATH
          purgefs log MOUNTPOINT|CONTAINER [--json | --daemon | --faults]
          purgefs fault add|list|clear MOUNTPOINT ...
          purgefs demo [--keep]
          purgefs metrics MOUNTPOINT|CONTAINER [--json | --prometheus] [--days N]
          purgefs run [-o OPTS] [--scenario FILE] [--restart-after-crash] [--scratch] [--json]
                      [--report FILE] [--html FILE] CONTAINER -- COMMAND [ARG...]
          purgefs explore [-o OPTS] --check CMD [--torn] [--max-states N] [--keep DIR] [--json]
                          [--report FILE] [--html FILE] CONTAINER -- COMMAND [ARG...]
          purgefs cloud offline|online MOUNTPOINT | purgefs cloud touch MOUNTPOINT PATH
          purgefs report REPORT.json --html FILE
          purgefs ui [--listen 127.0.0.1:PORT] MOUNT|--device NAME
          purgefs crash MOUNTPOINT [--dry-run]
          purgefs help [COMMAND]
          purgefs help attributes

        Commands:
        \(subcommands.map { TextLayout.row($0.name, $0.abstract, column: 14) }.joined(separator: "\n"))
        \(TextLayout.row("help", "Show this help, or a command's help", column: 14))

        Topics (purgefs help TOPIC):
        \(TextLayout.row(AttributesHelp.topic, AttributesHelp.abstract, column: 14))

        Options:
        \(TextLayout.row("-h, --help", "Show help; every command has --help too", column: 14))
        \(TextLayout.row("--version", "Print the version and the commit it was built from", column: 14))

        Sizes are bytes, or a number with K, M, G or T: powers of 1024.
        Exit status: 0 success, 1 failure, 64 usage error.
        The reference: man purgefs (docs/REFERENCE.md in the source tree).
        """
    }

    /// One line on stderr, prefixed `purgefs: ` (`<3>` when stderr is the journal).
    static func printError(_ line: String) {
        try? FileDescriptor.standardError.writeAll(Diagnostics.prefix(priority: .error) + line + "\n")
    }
}
