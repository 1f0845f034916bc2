import Glibc
import PurgeCore
import PurgeEngines
import PurgeSys

/// `purgefs log MOUNTPOINT|CONTAINER [--json | --daemon | --faults [--json]] [--state DIR]`:
/// what was purged, when and why; or the daemon's own log; or what fault rules did.
struct LogCommand: Subcommand {
    static let name = "log"
    static let abstract = "Show what was purged, when and why (or the daemon's own log)"
    static let help = """
        Usage: purgefs log MOUNTPOINT [--json | --daemon | --faults [--json]]
               purgefs log CONTAINER [--json | --daemon | --faults [--json]] [--state DIR]

        \(TextLayout.paragraph(
            "Prints the purge log of a container: every file purged, oldest first, with the time, the reason "
            + "(monitor: available space fell below the low mark; write: a write needed room; manual: purgefs "
            + "purge or the user.purgefs.purge attribute), the action (delete, or truncate in a tombstone "
            + "directory), its size, how long ago it was last used, and its path in the container. Times are "
            + "local. An empty log says that nothing has been purged yet."))

        \(TextLayout.paragraph(
            "MOUNTPOINT is a purgefs mount, in place or not: the log is read from the state directory of the "
            + "daemon serving it, even where the mount covers it. CONTAINER is a container that is not mounted "
            + "over itself: the log is read from CONTAINER/.purgefs/purge.log, or from the state directory its "
            + "last mount used when that was another one (state=DIR, recorded in CONTAINER/.purgefs when it "
            + "has one). A state directory itself may be given as CONTAINER too."))

        Flags:
        \(flags.rows)
        """

    static let flags = FlagTable<Self>(name, [
        .switch("--json", \.json, "print the log's lines as stored: one JSON object per line with time, path, bytes, size, "
                    + "last_used, reason, action (times in seconds since the epoch, sizes in bytes)"),
        .switch("--faults", \.faults, "print what fault rules did instead (faults.log in the state directory): every injection "
                    + "with its time, rule ID, operation, caller's pid, result (the errno, delayed ..., wrote N of M bytes) and "
                    + "path; with --json the lines as stored: time, rule, op, path, pid, action, result"),
        .switch("--daemon", \.daemon, "print the daemon's own log instead (daemon.log in the state directory: what it noted "
                    + "while serving, its errors)"),
        StateLocator.flag(\.stateArgument, "read the state in DIR: for a container mounted with state=DIR"),
    ])

    var pathArgument = ""
    var json = false
    var daemon = false
    var faults = false
    var stateArgument: String?
    /// Set by `validate()`: the log file to read.
    private(set) var logPath = ""

    init(parsing arguments: [String]) throws(CommandExit) {
        let parsed = try Self.flags.parse(arguments, help: Self.help, into: &self)
        pathArgument = try parsed.onePath("MOUNTPOINT", command: Self.name)
        try Self.flags.apply(parsed, to: &self)
        if json && daemon { throw .usage("\(Self.name): give --json or --daemon, not both (the daemon's log is text)") }
        if faults && daemon { throw .usage("\(Self.name): give --faults or --daemon, not both") }
    }

    mutating func validate() throws(CommandExit) {
        let state = try StateLocator.locate(pathArgument, state: stateArgument)
        logPath = state.directory + "/" + (daemon ? Self.daemonFileName : faults ? Self.faultsFileName : Self.fileName)
    }

    static let fileName = "purge.log"
    /// The fault rules' record (`FaultLog.fileName`).
    static let faultsFileName = "faults.log"
    /// The daemon's stderr once detached (`MountPreparation.logName`).
    static let daemonFileName = "daemon.log"

    func run(_ context: CommandContext) throws(CommandExit) {
        if daemon { return try printDaemonLog() }
        if faults {
            var table = FaultLogTable()
            return try printRecords(named: "fault log", empty: FaultLogTable.emptyText, { table.add($0) }, footer: { table.footer })
        }
        var table = LogTable(now: WallClock.seconds())
        try printRecords(named: "purge log", empty: Self.emptyText, { table.add($0) }, footer: { table.footer })
    }

    /// A log of JSON lines: as a table (`row` gives what to print for each
    /// line, then `footer`), or with `--json` its lines as stored.
    private func printRecords(
        named name: String, empty: String, _ row: (String) -> String?, footer: () -> String
    ) throws(CommandExit) {
        let file: FileDescriptor
        do throws(Errno) {
            file = try FileDescriptor.open(path: logPath, flags: O_RDONLY)
        } catch {
            if error == .noEntry {
                if !json { print(empty) }
                return
            }
            throw .failure("cannot open the \(name) \(logPath): \(error)")
        }
        defer { file.closeQuietly() }
        do throws(Errno) {
            try file.forEachLine { line in
                if json {
                    if !line.isEmpty { print(String(decoding: line, as: UTF8.self)) }
                } else if let text = row(String(decoding: line, as: UTF8.self)) {
                    print(text)
                }
            }
        } catch {
            throw .failure("cannot read the \(name) \(logPath): \(error)")
        }
        if !json { print(footer()) }
    }

    static let emptyText = "Nothing has been purged yet."

    /// The daemon log as it is, or a line saying it is empty.
    private func printDaemonLog() throws(CommandExit) {
        let file: FileDescriptor
        do throws(Errno) {
            file = try FileDescriptor.open(path: logPath, flags: O_RDONLY)
        } catch {
            if error == .noEntry { print(Self.emptyDaemonText); return }
            throw .failure("cannot open the daemon log \(logPath): \(error)")
        }
        defer { file.closeQuietly() }
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 1)
        defer { chunk.deallocate() }
        var copied = 0
        while true {
            let count: Int
            do throws(Errno) {
                count = try file.read(into: chunk)
            } catch {
                throw .failure("cannot read the daemon log \(logPath): \(error)")
            }
            if count == 0 { break }
            do throws(Errno) {
                try FileDescriptor.standardOutput.writeAll(UnsafeRawBufferPointer(rebasing: chunk[..<count]))
            } catch {
                throw .failure("cannot write the daemon log to stdout: \(error)")
            }
            copied += count
        }
        if copied == 0 { print(Self.emptyDaemonText) }
    }

    static let emptyDaemonText = "The daemon has logged nothing."
}
