import PurgeCore

/// `purgefs pin PATH`.
struct PinCommand: Subcommand {
    static let name = "pin"
    static let abstract = "Keep a file, or a directory's files, from being purged"
    static var help: String { PinFlag.help(pin: true) }

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
        try PinFlag.set(true, on: path, access)
    }
}
