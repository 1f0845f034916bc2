import PurgeCore

/// `purgefs download PATH`.
struct DownloadCommand: Subcommand {
    static let name = "download"
    static let abstract = "Download an evicted cloud document in the background"
    static var help: String { CloudRequest.help(evict: false) }

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
        try CloudRequest.request(.download, on: path, access)
    }
}
