/// The fault rules of a mount, with how each has counted the calls so far.
///
/// Counting (SPEC): a rule counts the calls that match it (operation, path,
/// process); the first `after` of them go through; from then on each call
/// could fire, until the rule has fired `times` times; a call that could
/// fire is drawn for with the rule's probability from its own generator,
/// seeded with its seed. So the same calls in the same order fire the same
/// way again.
///
/// Rules are asked in the order they were added: the first that fires acts,
/// and the rules after it do not see that call. IDs count up from 1 and are
/// never reused while mounted.
public struct FaultBook: Sendable {
    public struct Entry: Sendable {
        public let id: Int
        public let rule: FaultRule
        /// Calls that matched the rule (and reached it).
        public internal(set) var matched: UInt64 = 0
        /// Calls the rule acted on.
        public internal(set) var fired: UInt64 = 0
        var generator: SplitMix64
    }

    public private(set) var entries: [Entry] = []
    private var nextID = 1

    public init() {}

    /// Adds `rule`; one without a seed gets `seed`. Returns its ID.
    @discardableResult
    public mutating func add(_ rule: FaultRule, seed: UInt64) -> Int {
        var rule = rule
        if rule.seed == nil { rule.seed = seed }
        let id = nextID
        nextID += 1
        entries.append(Entry(id: id, rule: rule, generator: SplitMix64(seed: rule.seed!)))
        return id
    }

    /// Removes rule `id`, or every rule when nil; false when there is no rule `id`.
    @discardableResult
    public mutating func clear(_ id: Int? = nil) -> Bool {
        guard let id else {
            entries.removeAll()
            return true
        }
        guard let index = entries.firstIndex(where: { $0.id == id }) else { return false }
        entries.remove(at: index)
        return true
    }

    public var isEmpty: Bool { entries.isEmpty }

    /// What a call of `operations` by `pid` must supply before `decide`
    /// can tell: nil when no rule can match it (nothing more to find out).
    public func interest(in operations: FaultCallOperations, pid: Int32) -> FaultInterest? {
        var interest: FaultInterest?
        for entry in entries where operations.match(entry.rule.operation) {
            switch entry.rule.process {
            case .pid(let wanted) where wanted != pid: continue
            case .command: interest = FaultInterest(command: true)
            case .pid, nil: if interest == nil { interest = FaultInterest(command: false) }
            }
        }
        return interest
    }

    /// Whether some rule names `operation` (or any) and matches `path`,
    /// whoever calls and whatever its counters: nothing is counted.
    /// A nil `path`: whether some rule names the operation at all.
    public func couldMatch(_ operation: FaultOperation, path: String?) -> Bool {
        entries.contains { entry in
            (entry.rule.operation == operation || entry.rule.operation == .any) && (path.map(entry.rule.path.matches) ?? true)
        }
    }

    /// Counts `call` against the rules and returns the firing, if one fires.
    public mutating func decide(_ call: FaultCall) -> FaultFiring? {
        decide(call, matching: matching(call))
    }

    /// The IDs of the rules that match `call` (operation, process, path),
    /// nothing counted. A mount finds them on a copy of its book, outside
    /// the lock that `fault clear` takes, then has `decide(_:matching:)`
    /// count them under it.
    public func matching(_ call: FaultCall) -> Set<Int> {
        var matching: Set<Int> = []
        for entry in entries where call.operations.match(entry.rule.operation) && Self.matches(entry.rule.process, call)
            && entry.rule.path.matches(call.path) {
            matching.insert(entry.id)
        }
        return matching
    }

    /// `decide(_:)` with the matching rules found already (`matching(_:)`):
    /// rules cleared since are gone, rules added since do not see this call.
    public mutating func decide(_ call: FaultCall, matching: Set<Int>) -> FaultFiring? {
        guard !matching.isEmpty else { return nil }
        for index in entries.indices where matching.contains(entries[index].id) {
            let rule = entries[index].rule
            entries[index].matched += 1
            guard entries[index].matched > rule.after else { continue }
            if let times = rule.times, entries[index].fired >= times { continue }
            if rule.probability < 1 {
                guard entries[index].generator.nextUnit() < rule.probability else { continue }
            }
            entries[index].fired += 1
            return FaultFiring(rule: entries[index].id, action: rule.action)
        }
        return nil
    }

    private static func matches(_ process: FaultProcess?, _ call: FaultCall) -> Bool {
        switch process {
        case nil: return true
        case .pid(let pid): return pid == call.pid
        case .command(let name): return name == call.command
        }
    }

    /// The rules as the root's `user.purgefs.faults` attribute answers them:
    /// one line each, `ID MATCHED FIRED RULE` separated by tabs, RULE as a
    /// rules file line.
    public var listing: String {
        entries.map { "\($0.id)\t\($0.matched)\t\($0.fired)\t\($0.rule.line)\n" }.joined()
    }
}

/// What `FaultBook.decide` needs beyond the operation and the pid.
public struct FaultInterest: Equatable, Sendable {
    /// Some rule names a command: the caller's command name is needed.
    public var command: Bool

    public init(command: Bool) { self.command = command }
}

/// One call, as the rules see it.
public struct FaultCall: Sendable {
    public var operations: FaultCallOperations
    /// Relative to the container; the root is empty.
    public var path: String
    public var pid: Int32
    /// The caller's command name, when some rule asks for it.
    public var command: String?

    public init(operations: FaultCallOperations, path: String, pid: Int32, command: String? = nil) {
        self.operations = operations
        self.path = path
        self.pid = pid
        self.command = command
    }
}

/// A rule that fired, and what it does.
public struct FaultFiring: Equatable, Sendable {
    public var rule: Int
    public var action: FaultAction

    public init(rule: Int, action: FaultAction) {
        self.rule = rule
        self.action = action
    }
}

/// One line of `FaultBook.listing`, read back by the command.
public struct FaultListing: Equatable, Sendable {
    public var id: Int
    public var matched: UInt64
    public var fired: UInt64
    public var rule: FaultRule

    /// Parses the attribute's text; a line that does not parse is an error naming it.
    public static func parse(_ text: String) throws(FaultRuleError) -> [FaultListing] {
        var listings: [FaultListing] = []
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: "\t", maxSplits: 3, omittingEmptySubsequences: false)
            guard fields.count == 4, let id = Int(fields[0]), let matched = UInt64(fields[1]), let fired = UInt64(fields[2]) else {
                throw FaultRuleError("unreadable fault rule listing: '\(line.prefix(80))'")
            }
            let rule = try FaultRule(arguments: FaultRuleFile.words(of: fields[3]))
            listings.append(FaultListing(id: id, matched: matched, fired: fired, rule: rule))
        }
        return listings
    }
}
