import PurgeCore
import PurgeEngines
import PurgeSys

/// One command that acts on one path inside a purgefs mount, for each verb
/// (`pin`, `unpin`, `evict`, `download`): it takes one PATH, checks before
/// running that the path is on a purgefs mount, and hands it to the verb.
/// Parsing, validation and the help's shape are written once, here; a verb
/// gives its name, its words and what it does.
struct PathCommand<Verb: PathVerb>: Subcommand {
    static var name: String { Verb.name }
    static var abstract: String { Verb.abstract }
    static var help: String {
        """
        Usage: purgefs \(Verb.name) PATH

        \(TextLayout.paragraph(Verb.description))

        Flags:
        \(flags.rows)
        """
    }
    /// No flags but `--help`.
    static var flags: FlagTable<Self> { FlagTable(Verb.name, []) }

    private(set) var pathArgument = ""
    var access = AttributeAccess.live
    /// The canonical path, set by `validate()`.
    var path = ""

    init(parsing arguments: [String]) throws(CommandExit) {
        pathArgument = try Self.flags.read(arguments, help: Self.help, into: &self).onePath("PATH", command: Verb.name)
    }

    mutating func validate() throws(CommandExit) {
        let location = try MountLocation.find(pathArgument)
        try location.requireOnPurgefs()
        path = location.path
    }

    func run(_ context: CommandContext) throws(CommandExit) {
        try Verb.run(on: path, access)
    }
}

/// What one `PathCommand` does to its path.
protocol PathVerb {
    /// The word after `purgefs`.
    static var name: String { get }
    /// One line for the top-level help.
    static var abstract: String { get }
    /// The paragraph of `--help` that says what it does.
    static var description: String { get }
    static func run(on path: String, _ access: AttributeAccess) throws(CommandExit)
}

/// `purgefs pin PATH`.
typealias PinCommand = PathCommand<PinVerb>
/// `purgefs unpin PATH`.
typealias UnpinCommand = PathCommand<UnpinVerb>
/// `purgefs evict PATH`.
typealias EvictCommand = PathCommand<EvictVerb>
/// `purgefs download PATH`.
typealias DownloadCommand = PathCommand<DownloadVerb>

/// Sets `user.purgefs.pinned` to 1.
enum PinVerb: PathVerb {
    static let name = "pin"
    static let abstract = "Keep a file, or a directory's files, from being purged"
    static let description =
        "Pins PATH, a file or directory inside a purgefs mount: purging (by the monitor, a write that "
        + "needs room, or purgefs purge) never deletes a pinned file, nor any file below a pinned "
        + "directory. The pin is kept across remounts. Sets user.purgefs.pinned to 1, like "
        + "setfattr -n user.purgefs.pinned -v 1 PATH."

    static func run(on path: String, _ access: AttributeAccess) throws(CommandExit) {
        try access.set(.pinned, of: path, to: "1", refusal: "\(path) cannot be pinned: only files and directories can")
        print("Pinned \(path): purging leaves it alone.")
    }
}

/// Sets `user.purgefs.pinned` to 0.
enum UnpinVerb: PathVerb {
    static let name = "unpin"
    static let abstract = "Let a pinned file, or a directory's files, be purged again"
    static let description =
        "Unpins PATH, a file or directory inside a purgefs mount, so that its files may be purged again "
        + "(unless a directory above it is pinned too). Sets user.purgefs.pinned to 0, like "
        + "setfattr -n user.purgefs.pinned -v 0 PATH."

    static func run(on path: String, _ access: AttributeAccess) throws(CommandExit) {
        try access.set(.pinned, of: path, to: "0", refusal: "\(path) cannot be unpinned: only files and directories can")
        print("Unpinned \(path): it may be purged again.")
    }
}

/// Writes `user.purgefs.evict`.
enum EvictVerb: PathVerb {
    static let name = "evict"
    static let abstract = "Drop the local data of an uploaded cloud document"
    static let description =
        "Drops the local data of PATH, a file in a ubiquitous zone (Documents by default) of a purgefs "
        + "mount with cloud=DIR, once it is uploaded: it stays listed with its size, mode and times, "
        + "its allocated bytes become 0 and opening it downloads it again. Refused, with the reason, "
        + "while the file is not uploaded yet, changed since its upload, open, or shares its data with "
        + "a clone (user.purgefs.evictable says which). Sets user.purgefs.evict to 1, like "
        + "setfattr -n user.purgefs.evict -v 1 PATH."

    static func run(on path: String, _ access: AttributeAccess) throws(CommandExit) {
        try CloudRequest.request(.evict, on: path, access)
    }
}

/// Writes `user.purgefs.download`.
enum DownloadVerb: PathVerb {
    static let name = "download"
    static let abstract = "Download an evicted cloud document in the background"
    static let description =
        "Starts downloading PATH, an evicted file in a ubiquitous zone of a purgefs mount with "
        + "cloud=DIR, in the background; user.purgefs.download_status becomes current when it is done. "
        + "Sets user.purgefs.download to 1, like setfattr -n user.purgefs.download -v 1 PATH."

    static func run(on path: String, _ access: AttributeAccess) throws(CommandExit) {
        try CloudRequest.request(.download, on: path, access)
    }
}
