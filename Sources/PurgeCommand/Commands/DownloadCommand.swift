import PurgeCore

/// `purgefs download PATH`.
struct DownloadCommand: PathInMountCommand {
    static let name = "download"
    static let abstract = "Download an evicted cloud document in the background"
    static var help: String { CloudRequest.help(evict: false) }

    let pathArgument: String
    var access = AttributeAccess.live
    var path = ""

    init(pathArgument: String) {
        self.pathArgument = pathArgument
    }

    func run(_ context: CommandContext) throws(CommandExit) {
        try CloudRequest.request(.download, on: path, access)
    }
}
