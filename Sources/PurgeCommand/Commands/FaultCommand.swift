import PurgeCore
import PurgeEngines
import PurgeSys

/// `purgefs fault add|list|clear MOUNTPOINT ...`: the fault rules of a
/// running mount, through the root's `user.purgefs.faults` attribute.
struct FaultCommand: Subcommand {
    static let name = "fault"
    static let abstract = "Add, list or clear fault rules: errors, delays and short writes on chosen calls"
    /// `fault add`, `fault list`, `fault clear`.
    static var children: ChildCommands<Action> { ChildCommands([FaultAddCommand.self, FaultListCommand.self, FaultClearCommand.self]) }
    static var help: String {
        """
        \(children.usage)

        \(TextLayout.paragraph(about))

        Rule flags:
        \(FaultAddCommand.ruleRows)

        Other flags:
        \(FaultListCommand.flags.flags.map { TextLayout.row($0.term, "fault list: " + $0.help) }.joined(separator: "\n"))
        \(TextLayout.row("-h, --help", "show this help"))
        """
    }

    /// What a fault rule is, for this help and `fault add`'s.
    static let about =
        "A fault rule makes calls on the purgefs mount at MOUNTPOINT misbehave, while the mount runs: "
        + "the calls of one operation on paths matching a pattern (optionally only those of one process) "
        + "fail with an errno, are delayed, or (writes) write only part of their data. Rules count the "
        + "calls that match them: --after N lets the first N through and the rule may fire from call N+1 "
        + "on; --times M stops it after M firings; --probability P is drawn, from --seed, for each call "
        + "that could fire, so the same seed repeats a run exactly. Without them a rule fires on every "
        + "matching call. The first rule (by ID) that fires acts; later rules do not see that call. "
        + "Every firing is logged: purgefs log MOUNTPOINT --faults. Only the mount's owner or root may "
        + "add or clear rules. Rules last until cleared or unmounted; faults=FILE loads a file of them "
        + "at mount (one rule a line, written as the arguments of fault add after MOUNTPOINT, # comments)."

    enum Action: Equatable {
        case add(FaultRule)
        case list(json: Bool)
        case clear(Int?)
    }

    var pathArgument = ""
    var action = Action.list(json: false)
    var access = AttributeAccess.live
    private(set) var root = ""

    /// `fault CHILD MOUNTPOINT ...`: the child reads what follows MOUNTPOINT.
    init(parsing arguments: [String]) throws(CommandExit) {
        try Self.children.throwHelpIfAsked(arguments, parentHelp: Self.help)
        guard let verb = arguments.first else { throw .usage("fault: say \(Self.children.names) (see purgefs fault --help)") }
        guard arguments.count >= 2, !arguments[1].hasPrefix("-") || arguments[1] == "-" else {
            throw .usage("fault \(verb): MOUNTPOINT is missing (see purgefs fault --help)")
        }
        pathArgument = arguments[1]
        guard let child = Self.children.child(named: verb) else {
            throw .usage("fault: unknown action '\(verb)': say \(Self.children.names)")
        }
        action = try child.init(parsing: Array(arguments.dropFirst(2))).action
    }

    mutating func validate() throws(CommandExit) {
        root = try MountLocation.mountPoint(pathArgument).path
    }

    func run(_ context: CommandContext) throws(CommandExit) {
        switch action {
        case .add(let rule):
            try write("add " + rule.line)
            let added = try listings().last { $0.rule.sameRule(as: rule) }
            print("Added fault rule \(added.map { "\($0.id): \($0.rule.line)" } ?? rule.line)")
        case .list(let json):
            let rules = try listings()
            if json {
                print(JSONValue.array(rules.map(Self.json)).pretty)
            } else {
                print(Self.table(rules, mount: root))
            }
        case .clear(let id):
            if let id {
                guard try listings().contains(where: { $0.id == id }) else {
                    throw .failure("\(root) has no fault rule \(id) (see purgefs fault list \(root))")
                }
                try write("clear \(id)")
                print("Cleared fault rule \(id).")
            } else {
                let count = try listings().count
                try write("clear")
                print("Cleared \(HumanText.count(UInt64(count), "fault rule")).")
            }
        }
    }

    /// The rules of the mount, with their counters.
    func listings() throws(CommandExit) -> [FaultListing] {
        try Self.listings(of: root, access)
    }

    static func listings(of root: String, _ access: AttributeAccess) throws(CommandExit) -> [FaultListing] {
        let bytes: [UInt8]
        do throws(Errno) {
            bytes = try access.read(PurgeAttribute.faults.fullName, root)
        } catch {
            if error == .noData { throw .failure("\(root) does not answer \(PurgeAttribute.faults.fullName): not a purgefs mount with fault rules") }
            if error == .notConnected { throw .failure("\(root): the purgefs daemon is not answering (did it die? purgefs unmount the mount)") }
            throw .failure("cannot read the fault rules of \(root): \(error)")
        }
        do throws(FaultRuleError) {
            return try FaultListing.parse(String(decoding: bytes, as: UTF8.self))
        } catch {
            throw .failure("\(root): \(error)")
        }
    }

    private func write(_ request: String) throws(CommandExit) {
        do throws(Errno) {
            try access.write(PurgeAttribute.faults.fullName, root, Array(request.utf8))
        } catch {
            switch error {
            case .notPermitted, .accessDenied:
                throw .failure("only the mount's owner or root may change the fault rules of \(root)")
            case .noSpace:
                throw .failure("\(root) holds as many fault rules as it can: clear some first")
            case .notConnected:
                throw .failure("\(root): the purgefs daemon is not answering (did it die? purgefs unmount the mount)")
            default:
                throw .failure("\(root) refused the fault rule request '\(request)': \(error)")
            }
        }
    }

    static func table(_ rules: [FaultListing], mount: String) -> String {
        if rules.isEmpty { return "No fault rules on \(mount)." }
        let rows = rules.map { [String($0.id), String($0.matched), String($0.fired), $0.rule.line] }
        let header = ["ID", "MATCHED", "FIRED", "RULE"]
        let widths = (0..<3).map { column in (rows + [header]).map { $0[column].count }.max()! }
        func line(_ row: [String]) -> String {
            (0..<3).map { String(repeating: " ", count: widths[$0] - row[$0].count) + row[$0] }.joined(separator: "  ")
                + "  " + row[3]
        }
        return ([line(header)] + rows.map(line)).joined(separator: "\n")
    }

    static func json(_ listing: FaultListing) -> JSONValue {
        let rule = listing.rule
        var fields: [(String, JSONValue)] = [
            ("id", .integer(listing.id)), ("rule", .string(rule.line)), ("op", .string(rule.operation.rawValue)),
            ("path", .string(rule.path.text)),
        ]
        switch rule.action {
        case .fail(let name): fields += [("action", .string("errno")), ("errno", .string(name))]
        case .delay(let nanoseconds): fields += [("action", .string("delay")), ("delay_ns", .integer(nanoseconds))]
        case .shortWrite: fields.append(("action", .string("short_write")))
        case .offline: fields.append(("action", .string("offline")))
        }
        fields.append(("probability", .number(String(rule.probability))))
        fields.append(("after", .integer(rule.after)))
        fields.append(("times", rule.times.map { .integer($0) } ?? .null))
        switch rule.process {
        case .pid(let pid): fields.append(("pid", .integer(Int(pid))))
        case .command(let name): fields.append(("comm", .string(name)))
        case nil: break
        }
        fields.append(("seed", rule.seed.map { .integer($0) } ?? .null))
        fields += [("matched", .integer(listing.matched)), ("fired", .integer(listing.fired))]
        return .object(fields)
    }
}

extension FaultRule {
    /// The same rule, but for the seed when this one has none (the daemon picked it).
    func sameRule(as other: FaultRule) -> Bool {
        var mine = self
        if other.seed == nil { mine.seed = nil }
        return mine == other
    }
}
