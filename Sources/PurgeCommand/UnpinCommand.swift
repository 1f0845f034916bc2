import PurgeCore

/// `purgefs unpin PATH`.
struct UnpinCommand: Subcommand {
    static let name = "unpin"
    static let abstract = "Let a pinned file, or a directory's files, be purged again"
    static var help: String { PinFlag.help(pin: false) }

    var pathArgument: String
    var access = AttributeAccess.live
    private(set) var path = ""

    init(parsing arguments: [String]) throws(CommandExit) {
        pathArgument = try PathInMount.parse(arguments, command: Self.name, help: Self.help)
    }

    mutating func validate() throws(CommandExit) {
        path = try PathInMount.resolve(pathArgument)
    }

    func run(_ context: CommandContext) throws(CommandExit) {
        try PinFlag.set(false, on: path, access)
    }
}
