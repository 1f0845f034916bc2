import PurgeCore

/// `purgefs pin PATH`.
struct PinCommand: PathInMountCommand {
    static let name = "pin"
    static let abstract = "Keep a file, or a directory's files, from being purged"
    static var help: String { PinFlag.help(pin: true) }

    let pathArgument: String
    var access = AttributeAccess.live
    var path = ""

    init(pathArgument: String) {
        self.pathArgument = pathArgument
    }

    func run(_ context: CommandContext) throws(CommandExit) {
        try PinFlag.set(true, on: path, access)
    }
}
