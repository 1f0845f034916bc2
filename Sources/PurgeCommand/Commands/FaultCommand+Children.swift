import PurgeCore
import PurgeEngines

/// `purgefs fault add MOUNTPOINT RULE`: the rule is `FaultRule`'s grammar
/// (PurgeCore), the same in a rules file (`faults=FILE`) and a scenario's
/// `fault` step, so its flags are read there; their help rows are here.
struct FaultAddCommand: ChildCommand {
    static let name = "add"
    static let usage = """
        purgefs fault add MOUNTPOINT --op OP --path GLOB
                                 (--errno NAME | --delay DURATION | --short-write | --offline)
                                 [--probability P] [--after N] [--times M]
                                 [--pid PID | --comm NAME] [--seed S]
        """
    static var help: String {
        """
        Usage: \(usage)

        \(TextLayout.paragraph(FaultCommand.about))

        Rule flags:
        \(ruleRows)
        \(TextLayout.row("-h, --help", "show this help"))
        """
    }

    /// The help of the rule's flags.
    static var ruleRows: String {
        [
            TextLayout.row("--op OP", "one of: \(FaultOperation.names); fsync also matches fdatasync, setattr also matches truncate"),
            TextLayout.row("--path GLOB", "relative to the container: * and ? within a name, [a-z], ** for any number of "
                           + "directories ('Documents/**/*.sqlite*'); ** alone matches every path, the root included; "
                           + "at most 1024 characters"),
            TextLayout.row("--errno NAME", "fail with this errno: \(FaultAction.errnoNames.joined(separator: ", "))"),
            TextLayout.row("--delay DURATION", "hold the call this long, then run it: 500us, 250ms, 1.5s, 2m (at most 1 hour)"),
            TextLayout.row("--short-write", "with --op write: write the first half of the data and return that count"),
            TextLayout.row("--offline", "with a cloud operation: fail at once as when the network is down (the log says offline)"),
            TextLayout.row("--probability P", "fire with probability P, from 0 to 1 (default 1)"),
            TextLayout.row("--after N", "let the first N matching calls through (default 0)"),
            TextLayout.row("--times M", "stop after firing M times (default: no limit)"),
            TextLayout.row("--pid PID", "only calls made by this process"),
            TextLayout.row("--comm NAME", "only calls made by processes of this command name (as ps shows it, at most 15 bytes)"),
            TextLayout.row("--seed S", "the seed of the probability draws (default: random, shown by fault list)"),
        ].joined(separator: "\n")
    }

    let action: FaultCommand.Action

    init(parsing arguments: [String]) throws(CommandExit) {
        do throws(FaultRuleError) {
            action = .add(try FaultRule(arguments: arguments))
        } catch {
            throw .usage("fault add: \(error)")
        }
    }
}

/// `purgefs fault list MOUNTPOINT [--json]`.
struct FaultListCommand: ChildCommand {
    static let name = "list"
    static let usage = "purgefs fault list MOUNTPOINT [--json]"
    static let flags = FlagTable<Self>("fault list", [
        .switch("--json", \.json, "a JSON array, each rule with id, rule, op, path, action, matched, fired"),
    ])
    static var help: String {
        """
        Usage: \(usage)

        \(TextLayout.paragraph(
            "Lists the fault rules of the purgefs mount at MOUNTPOINT, by ID, each with the calls it matched, "
            + "the times it fired and the rule in canonical form (its seed included)."))

        Flags:
        \(flags.rows)
        """
    }

    private var json = false
    var action: FaultCommand.Action { .list(json: json) }

    init(parsing arguments: [String]) throws(CommandExit) {
        let parsed = try Self.flags.read(arguments, help: Self.help, into: &self)
        if let extra = parsed.paths.first { throw .usage("fault list: unexpected argument '\(extra)'") }
    }
}

/// `purgefs fault clear MOUNTPOINT [ID]`.
struct FaultClearCommand: ChildCommand {
    static let name = "clear"
    static let usage = "purgefs fault clear MOUNTPOINT [ID]"
    static let flags = FlagTable<Self>("fault clear", [])
    static var help: String {
        """
        Usage: \(usage)

        \(TextLayout.paragraph(
            "Clears the fault rule ID (as fault list shows it) of the purgefs mount at MOUNTPOINT, or every rule "
            + "without ID. Only the mount's owner or root may clear rules."))

        Flags:
        \(flags.rows)
        """
    }

    private(set) var action = FaultCommand.Action.clear(nil)

    init(parsing arguments: [String]) throws(CommandExit) {
        let parsed = try Self.flags.read(arguments, help: Self.help, into: &self)
        if parsed.paths.count > 1 { throw .usage("fault clear: unexpected argument '\(parsed.paths[1])'") }
        if let text = parsed.paths.first {
            guard let id = Int(text), id > 0 else { throw .usage("fault clear: '\(text)' is not a rule ID (see purgefs fault list)") }
            action = .clear(id)
        }
    }
}
