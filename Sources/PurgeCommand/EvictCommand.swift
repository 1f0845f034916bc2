import PurgeCore

/// `purgefs evict PATH`.
struct EvictCommand: Subcommand {
    static let name = "evict"
    static let abstract = "Drop the local data of an uploaded cloud document"
    static var help: String { CloudRequest.help(evict: true) }

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
        try CloudRequest.request(.evict, on: path, access)
    }
}
