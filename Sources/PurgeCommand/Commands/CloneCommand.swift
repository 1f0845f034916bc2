import Glibc
import PurgeCore
import PurgeEngines
import PurgeSys

/// `purgefs clone SOURCE DEST`: DEST becomes a clone of SOURCE, atomically,
/// like `clonefile(2)`. The clone is made through the mount: a temporary
/// name in DEST's directory, one `copy_file_range` of the whole file into it
/// (which the daemon turns into a clone), then a rename into place that
/// never replaces (`RENAME_NOREPLACE`). A crash leaves no DEST or a whole
/// one; temporary names it leaves are removed at the next mount.
struct CloneCommand: Subcommand {
    static let name = "clone"
    static let abstract = "Make DEST a copy-on-write clone of SOURCE"
    static var help: String {
        """
        Usage: purgefs clone SOURCE DEST

        \(TextLayout.paragraph(
            "Makes DEST, which must not exist, a clone of the regular file SOURCE: same content and mode, "
            + "an independent file that shares SOURCE's storage until one of them is modified. Both must be in "
            + "the same purgefs mount. DEST appears whole or not at all."))

        \(TextLayout.paragraph(
            "The clone costs no space. On a backing filesystem with reflinks (XFS with reflink=1, btrfs) a "
            + "modification costs only the blocks it changes; on other backing filesystems (ext4) the first "
            + "modification of either file copies it whole (with state=DIR on another filesystem than the "
            + "container, DEST is an ordinary full copy)."))

        \(TextLayout.paragraph(
            "Fails when DEST exists (File exists), when SOURCE and DEST are not in one purgefs mount "
            + "(Invalid cross-device link), or when SOURCE is not a regular file."))

        Flags:
        \(flags.rows)
        """
    }
    /// No flags but `--help`.
    static let flags = FlagTable<Self>(name, [])

    /// Names the temporary files start with; the mount removes leftovers.
    static let temporaryPrefix = Paths.cloneTemporaryPrefix

    var sourceArgument = ""
    var destinationArgument = ""
    private(set) var source = ""
    private(set) var directory = ""
    private(set) var name = ""

    init(parsing arguments: [String]) throws(CommandExit) {
        let parsed = try Self.flags.read(arguments, help: Self.help, into: &self)
        guard parsed.paths.count == 2 else {
            throw .usage("clone: give SOURCE and DEST (see purgefs clone --help)")
        }
        guard !parsed.paths[0].isEmpty, !parsed.paths[1].isEmpty else { throw .usage("clone: an empty path was given") }
        sourceArgument = parsed.paths[0]
        destinationArgument = parsed.paths[1]
    }

    mutating func validate() throws(CommandExit) {
        if Paths.exists(destinationArgument) {
            throw .failure("clone: \(destinationArgument): \(Errno.exists)")
        }
        let sourceLocation = try MountLocation.find(sourceArgument)
        guard let status = try? Paths.linkStatus(sourceLocation.path), status.st_mode & S_IFMT == S_IFREG else {
            throw .failure("clone: \(sourceArgument) is not a regular file")
        }
        var trimmed = destinationArgument
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
        let slash = trimmed.lastIndex(of: "/")
        let parent = slash.map { $0 == trimmed.startIndex ? "/" : String(trimmed[..<$0]) } ?? "."
        let leaf = slash.map { String(trimmed[trimmed.index(after: $0)...]) } ?? trimmed
        guard !leaf.isEmpty, leaf != ".", leaf != ".." else { throw .usage("clone: \(destinationArgument) names no file") }
        let parentLocation = try MountLocation.find(parent)
        guard let sourceMount = sourceLocation.mount, let parentMount = parentLocation.mount,
              sourceMount.id == parentMount.id
        else {
            throw .failure("clone: \(sourceArgument) and \(destinationArgument) are not in one purgefs mount: \(Errno(EXDEV))")
        }
        source = sourceLocation.path
        directory = parentLocation.path
        name = leaf
    }

    func run(_ context: CommandContext) throws(CommandExit) {
        do throws(Errno) {
            try Self.clone(source: source, directory: directory, name: name)
        } catch {
            throw .failure("clone: \(destinationArgument): \(error)")
        }
        print("Cloned \(source) to \(directory == "/" ? "" : directory)/\(name).")
    }

    /// Clones into a temporary name, then renames it into place without replacing.
    static func clone(source: String, directory: String, name: String) throws(Errno) {
        try Paths.clone(source: source, directory: directory, name: name)
    }
}
