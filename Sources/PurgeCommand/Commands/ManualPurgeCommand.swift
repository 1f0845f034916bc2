import PurgeCore
import PurgeEngines
import PurgeSys

/// `purgefs purge MOUNTPOINT (--bytes SIZE | --all)`: purges now, as the
/// monitor would, and says what was freed.
struct ManualPurgeCommand: Subcommand {
    static let name = "purge"
    static let abstract = "Purge least recently used purgeable files now"
    static let help = """
        Usage: purgefs purge MOUNTPOINT (--bytes SIZE | --all)

        \(TextLayout.paragraph(
            "Purges the purgeable files of the purgefs mount at MOUNTPOINT, least recently used first, as the "
            + "space monitor does under pressure: regular files in purgeable zones that are not pinned and not "
            + "open. Directories stay. Returns once the purge is done and prints what was freed (the difference "
            + "of the root's purged_bytes and purged_files, so a purge by the monitor at the same moment is "
            + "counted too). Each purged file is logged with reason 'manual' (see purgefs log). Only the mount's "
            + "owner or root may purge. The same as setfattr -n user.purgefs.purge -v SIZE|all MOUNTPOINT."))

        Flags:
        \(flags.rows)

        \(TextLayout.paragraph("SIZE: bytes, or a number with K, M, G or T (powers of 1024), as in 512M or 1.5G."))
        """

    enum Amount: Equatable {
        case bytes(ByteSize)
        case all

        /// The value written to `user.purgefs.purge`.
        var attributeValue: String {
            switch self {
            case .bytes(let size): return String(size.bytes)
            case .all: return "all"
            }
        }
    }

    static let flags = FlagTable<Self>(name, [
        .value("--bytes", "SIZE", \.bytes, "purge until at least SIZE bytes are freed, or nothing is left") {
            value throws(CommandExit) in try value.size(positive: true)
        },
        .switch("--all", \.all, "purge every purgeable file"),
    ])

    var pathArgument = ""
    var amount = Amount.all
    private var bytes: ByteSize?
    private var all = false
    var access = AttributeAccess.live
    private(set) var root = ""

    init(parsing arguments: [String]) throws(CommandExit) {
        let parsed = try Self.flags.parse(arguments, help: Self.help, into: &self)
        pathArgument = try parsed.onePath("MOUNTPOINT", command: Self.name)
        try Self.flags.apply(parsed, to: &self)
        switch (bytes, all) {
        case (let size?, false): amount = .bytes(size)
        case (nil, true): amount = .all
        case (.some, true): throw .usage("purge: give either --bytes SIZE or --all, not both")
        case (nil, false): throw .usage("purge: say how much: --bytes SIZE or --all (see purgefs purge --help)")
        }
    }

    mutating func validate() throws(CommandExit) {
        root = try MountLocation.mountPoint(pathArgument).path
    }

    func run(_ context: CommandContext) throws(CommandExit) {
        let beforeBytes = try access.number(.purgedBytes, of: root)
        let beforeFiles = try access.number(.purgedFiles, of: root)
        try access.set(.purge, of: root, to: amount.attributeValue)
        let afterBytes = try access.number(.purgedBytes, of: root)
        let afterFiles = try access.number(.purgedFiles, of: root)
        let purgeable = try access.number(.purgeable, of: root)
        print(Self.report(freed: afterBytes.clampedMinus(beforeBytes), files: afterFiles.clampedMinus(beforeFiles),
                          purgeableLeft: purgeable))
    }

    static func report(freed: UInt64, files: UInt64, purgeableLeft: UInt64) -> String {
        let left = "\(HumanText.size(purgeableLeft)) purgeable left."
        if files == 0 && freed == 0 {
            return "Nothing was purged: no file in a purgeable zone could go (pinned, open, or none there). " + left
        }
        return "Purged \(HumanText.count(files, "file")), freeing \(HumanText.size(freed)) (\(freed) bytes). " + left
    }
}
