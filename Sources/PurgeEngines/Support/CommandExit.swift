/// How a command ends when it does not simply succeed: the three outcomes
/// of swift-argument-parser's shape (clean exit with help, usage error,
/// failure), each with the one line or text to show.
public enum CommandExit: Error, Equatable, Sendable {
    /// `--help` was asked for: the text goes to stdout, exit 0.
    case help(String)
    /// The command line is wrong: one line to stderr, exit 64 (`EX_USAGE`).
    case usage(String)
    /// The command was understood but could not be done: one line to stderr, exit 1.
    case failure(String)
    /// Nothing to print: exit with this status (`purgefs run` passes on its command's).
    case passOn(Int32)

    /// The process exit status for this outcome.
    public var status: Int32 {
        switch self {
        case .help: return 0
        case .usage: return 64
        case .failure: return 1
        case .passOn(let status): return status
        }
    }

    /// The one line a caller shows for it (a help text whole).
    public var line: String {
        switch self {
        case .help(let text): return text
        case .usage(let line), .failure(let line): return line
        case .passOn(let status): return "exited with status \(status)"
        }
    }
}
