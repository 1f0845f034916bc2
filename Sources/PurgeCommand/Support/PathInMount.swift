import PurgeCore
import PurgeSys

/// A command that acts on one path inside a purgefs mount (`pin`, `unpin`,
/// `evict`, `download`): it takes one PATH and checks, before running,
/// that the path is on a purgefs mount. Conformers give their name, help
/// and `run`; parsing and validation are shared here.
protocol PathInMountCommand: Subcommand {
    var pathArgument: String { get }
    /// The canonical path, set by `validate()`.
    var path: String { get set }
    init(pathArgument: String)
}

extension PathInMountCommand {
    init(parsing arguments: [String]) throws(CommandExit) {
        self.init(pathArgument: try ParsedArguments(arguments, command: Self.name, help: Self.help)
            .onePath("PATH", command: Self.name))
    }

    mutating func validate() throws(CommandExit) {
        let location = try MountLocation.find(pathArgument)
        try location.requireOnPurgefs()
        path = location.path
    }
}

/// The help text shape those commands share.
enum PathInMount {
    static func help(command: String, description: String) -> String {
        """
        Usage: purgefs \(command) PATH

        \(TextLayout.paragraph(description))

        Flags:
        \(TextLayout.row("-h, --help", "show this help"))
        """
    }
}
