import Glibc
import PurgeCore
import PurgeSys

/// `purgefs log MOUNTPOINT|CONTAINER [--json]`: what was purged, when and why.
struct LogCommand: Subcommand {
    static let name = "log"
    static let abstract = "Show what was purged, when and why"
    static let help = """
        Usage: purgefs log MOUNTPOINT [--json]
               purgefs log CONTAINER [--json]

        \(TextLayout.paragraph(
            "Prints the purge log of a container: every file purged, oldest first, with the time, the reason "
            + "(monitor: available space fell below the low mark; write: a write needed room; manual: purgefs "
            + "purge or the user.purgefs.purge attribute), the action (delete, or truncate in a tombstone "
            + "directory), its size, how long ago it was last used, and its path in the container. Times are "
            + "local. An empty log says that nothing has been purged yet."))

        \(TextLayout.paragraph(
            "MOUNTPOINT is a purgefs mount, in place or not: the log is read from the state directory of the "
            + "daemon serving it, even where the mount covers it. CONTAINER is a container that is not mounted "
            + "over itself: the log is read from CONTAINER/.purgefs/purge.log."))

        Flags:
        \(TextLayout.row("--json", "print the log's lines as stored: one JSON object per line with time, path, bytes, size, last_used, reason, action (times in seconds since the epoch, sizes in bytes)"))
        \(TextLayout.row("-h, --help", "show this help"))
        """

    var pathArgument: String
    var json = false
    /// Set by `validate()`: the log file to read.
    private(set) var logPath = ""

    init(parsing arguments: [String]) throws(CommandExit) {
        let parsed = try ParsedArguments(arguments, command: Self.name, help: Self.help, switchFlags: ["--json"])
        pathArgument = try parsed.onePath("MOUNTPOINT", command: Self.name)
        json = parsed.switches.contains("--json")
    }

    mutating func validate() throws(CommandExit) {
        let location = try MountLocation.find(pathArgument)
        if location.mount != nil {
            try location.requireMountPoint()
            logPath = try Self.stateDirectory(ofMount: location) + "/" + Self.fileName
        } else {
            logPath = try Self.stateDirectory(ofContainer: location.path) + "/" + Self.fileName
        }
    }

    static let fileName = "purge.log"

    /// The daemon's state directory, through its runtime record.
    private static func stateDirectory(ofMount location: MountLocation) throws(CommandExit) -> String {
        guard let mount = location.mount else { preconditionFailure("not a purgefs mount") }
        let record = try RuntimeRecordLocator.record(of: mount, at: location.path)
        let state = record.stateDirectoryPath
        do throws(Errno) {
            guard try Paths.isDirectory(state) else { throw Errno.notDirectory }
        } catch {
            throw .failure("cannot reach the state directory of the daemon (pid \(record.processID)) serving \(location.path) through \(state): \(error)")
        }
        return state
    }

    /// `CONTAINER/.purgefs` of a container that is not mounted over itself.
    private static func stateDirectory(ofContainer container: String) throws(CommandExit) -> String {
        let state = container + "/.purgefs"
        guard (try? Paths.isDirectory(state)) == true else {
            throw .failure("\(container) is neither a purgefs mount nor a container with a state directory (.purgefs)")
        }
        return state
    }

    func run(_ context: CommandContext) throws(CommandExit) {
        let file: FileDescriptor
        do throws(Errno) {
            file = try FileDescriptor.open(path: logPath, flags: O_RDONLY)
        } catch {
            if error == .noEntry {
                if !json { print(Self.emptyText) }
                return
            }
            throw .failure("cannot open the purge log \(logPath): \(error)")
        }
        defer { file.closeQuietly() }
        var table = LogTable(now: WallClock.seconds())
        do throws(Errno) {
            try file.forEachLine { line in
                if json {
                    if !line.isEmpty { print(String(decoding: line, as: UTF8.self)) }
                } else if let text = table.add(String(decoding: line, as: UTF8.self)) {
                    print(text)
                }
            }
        } catch {
            throw .failure("cannot read the purge log \(logPath): \(error)")
        }
        if !json { print(table.footer) }
    }

    static let emptyText = "Nothing has been purged yet."
}
