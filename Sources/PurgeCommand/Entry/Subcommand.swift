import PurgeEngines

/// One `purgefs` subcommand, in three steps as swift-argument-parser runs them:
/// `init(parsing:)` reads the arguments (pure, no I/O), `validate()` checks
/// them against the system (paths exist, mounts), `run()` does the work.
///
/// A new subcommand is one file with one type conforming to this, plus its
/// entry in `Purgefs.subcommands`.
protocol Subcommand {
    /// The word after `purgefs`.
    static var name: String { get }
    /// One line for the top-level help.
    static var abstract: String { get }
    /// The full `--help` text.
    static var help: String { get }

    /// Reads the arguments after the subcommand's name. Throws `.help` for
    /// `-h`/`--help` and `.usage` for anything malformed.
    init(parsing arguments: [String]) throws(CommandExit)

    /// Checks the parsed arguments against the system; may resolve paths.
    mutating func validate() throws(CommandExit)

    /// Does the work.
    func run(_ context: CommandContext) throws(CommandExit)
}

/// What a command may need from the process it runs in, handed over by
/// `Purgefs.main` so commands stay testable without globals.
struct CommandContext: Sendable {
    /// The ready pipe when this process is a daemon child of `purgefs mount`.
    var readySignal: ReadySignal?
}
