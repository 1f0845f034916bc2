import PurgeCore
import PurgeEngines
import PurgeSys

/// `purgefs crash MOUNTPOINT [--dry-run]`: the container becomes what it
/// would be after a power loss now, and the mount carries on from there.
struct CrashCommand: Subcommand {
    static let name = "crash"
    static let abstract = "Lose what was not synced, as a power loss would"
    static let help = """
        Usage: purgefs crash MOUNTPOINT [--dry-run]

        \(TextLayout.paragraph(
            "Makes the container of the purgefs mount at MOUNTPOINT what it would be after the machine lost power "
            + "now, and the mount carries on from there, so the app can be restarted on it: every byte written to a "
            + "file since its last fsync or fdatasync (or O_SYNC write) is lost, the file reading as it did at that "
            + "sync, size included; names created, removed or renamed since the last fsync of their directory are "
            + "undone (a file synced but never linked durably vanishes); files open before the crash answer EIO. "
            + "Prints one line per thing undone; each is also in the daemon's log. The mount must have been made "
            + "with -o crashable (what is not synced is tracked from the mount on). Only the mount's owner or root "
            + "may crash a mount. The same as setfattr -n user.purgefs.crash -v 1 MOUNTPOINT."))

        Flags:
        \(flags.rows)
        """

    static let flags = FlagTable<Self>(name, [
        .switch("--dry-run", \.dryRun, "list what a crash now would undo; change nothing"),
    ])

    var pathArgument = ""
    var dryRun = false
    var access = AttributeAccess.live
    private(set) var root = ""

    init(parsing arguments: [String]) throws(CommandExit) {
        let parsed = try Self.flags.parse(arguments, help: Self.help, into: &self)
        pathArgument = try parsed.onePath("MOUNTPOINT", command: Self.name)
        try Self.flags.apply(parsed, to: &self)
    }

    mutating func validate() throws(CommandExit) {
        root = try MountLocation.mountPoint(pathArgument).path
    }

    func run(_ context: CommandContext) throws(CommandExit) {
        let pending = try text(.crash)  // refused at once by a mount without crashable
        if dryRun {
            let lines = pending
            print(lines.isEmpty ? "Nothing would be lost: everything is synced." : "A crash now would undo:\n" + lines, terminator: lines.isEmpty ? "\n" : "")
            return
        }
        try access.set(.crash, of: root, to: "1")
        let lines = try text(.lastCrash)
        print(lines.isEmpty ? "Crashed: nothing was lost, everything was synced." : "Crashed, undoing:\n" + lines, terminator: lines.isEmpty ? "\n" : "")
    }

    /// The text of `attribute` on the mount's root.
    private func text(_ attribute: PurgeAttribute) throws(CommandExit) -> String {
        do throws(Errno) {
            return String(decoding: try access.read(attribute.fullName, root), as: UTF8.self)
        } catch {
            if error == .noData {
                throw .failure("\(root) was not mounted with -o crashable: nothing unsynced is tracked, so it cannot crash")
            }
            if error == .notConnected {
                throw .failure("\(root): the purgefs daemon is not answering (did it die? purgefs unmount the mount)")
            }
            throw .failure("\(root) does not answer \(attribute.fullName): \(error) (not a purgefs mount, or one without crash simulation)")
        }
    }
}
