import PurgeCore

/// `purgefs evict PATH`.
struct EvictCommand: PathInMountCommand {
    static let name = "evict"
    static let abstract = "Drop the local data of an uploaded cloud document"
    static var help: String { CloudRequest.help(evict: true) }

    let pathArgument: String
    var access = AttributeAccess.live
    var path = ""

    init(pathArgument: String) {
        self.pathArgument = pathArgument
    }

    func run(_ context: CommandContext) throws(CommandExit) {
        try CloudRequest.request(.evict, on: path, access)
    }
}
