import PurgeEngines

/// A command under a parent (`fault add`, `cloud touch`), as
/// swift-argument-parser's subcommands are: the parent's first word names
/// it, it reads the rest with its own `FlagTable` and has its own `--help`
/// (`purgefs fault add --help`); the parent does what it read (`action`).
protocol ChildCommand<Action> {
    associatedtype Action
    /// The word after the parent's (`add`).
    static var name: String { get }
    /// Its usage, as the line after `Usage: ` (continuation lines indented
    /// to line up under it): its own help and the parent's show it.
    static var usage: String { get }
    /// The full `--help` text.
    static var help: String { get }
    /// Reads the arguments the parent hands over (after its word).
    init(parsing arguments: [String]) throws(CommandExit)
    /// What the parent does for it.
    var action: Action { get }
}

/// The children of one parent command, in the order its help and messages
/// name them.
struct ChildCommands<Action> {
    let children: [any ChildCommand<Action>.Type]

    init(_ children: [any ChildCommand<Action>.Type]) { self.children = children }

    /// The child `word` names, if any.
    func child(named word: String) -> (any ChildCommand<Action>.Type)? {
        children.first { $0.name == word }
    }

    /// `-h`/`--help` before `--` asks for help: the help of the child the
    /// first word names, else `parentHelp`.
    func throwHelpIfAsked(_ arguments: [String], parentHelp: String) throws(CommandExit) {
        guard arguments.prefix(while: { $0 != "--" }).contains(where: { $0 == "-h" || $0 == "--help" }) else { return }
        throw .help(arguments.first.flatMap(child(named:))?.help ?? parentHelp)
    }

    /// `add, list or clear`.
    var names: String {
        let names = children.map { $0.name }
        return names.count < 2 ? names.joined() : names.dropLast().joined(separator: ", ") + " or " + names.last!
    }

    /// The parent's usage: every child's, one under the other.
    var usage: String {
        "Usage: " + children.map { $0.usage }.joined(separator: "\n       ")
    }
}
