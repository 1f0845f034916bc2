import PurgeCore
import PurgeSys

/// What the commands acting on one path inside a purgefs mount share
/// (`pin`, `unpin`, `evict`, `download`): their help's shape, their one
/// argument, and the check that the path is on a purgefs mount.
enum PathInMount {
    static func help(command: String, description: String) -> String {
        """
        Usage: purgefs \(command) PATH

        \(TextLayout.paragraph(description))

        Flags:
        \(TextLayout.row("-h, --help", "show this help"))
        """
    }

    /// The PATH argument.
    static func parse(_ arguments: [String], command: String, help: String) throws(CommandExit) -> String {
        try ParsedArguments(arguments, command: command, help: help).onePath("PATH", command: command)
    }

    /// The canonical path, which must be inside a purgefs mount.
    static func resolve(_ argument: String) throws(CommandExit) -> String {
        let location = try MountLocation.find(argument)
        try location.requireOnPurgefs()
        return location.path
    }
}
