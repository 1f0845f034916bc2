import PurgeCore

/// `purgefs unpin PATH`.
struct UnpinCommand: PathInMountCommand {
    static let name = "unpin"
    static let abstract = "Let a pinned file, or a directory's files, be purged again"
    static var help: String { PinFlag.help(pin: false) }

    let pathArgument: String
    var access = AttributeAccess.live
    var path = ""

    init(pathArgument: String) {
        self.pathArgument = pathArgument
    }

    func run(_ context: CommandContext) throws(CommandExit) {
        try PinFlag.set(false, on: path, access)
    }
}
