/// A scenario for `purgefs run --scenario FILE`: steps applied to the mount
/// while the command runs. Plain text, one step a line, `#` to the end of a
/// line is a comment (outside quotes). A step is a trigger, an optional
/// `timeout DURATION` (for `when` triggers) and an action:
///
/// ```
/// at 2s squeeze 5M
/// when file Documents/app.sqlite exists timeout 30s  fault --op fsync --path 'Documents/*' --errno EIO --times 1
/// when used > 90% purge all
/// ```
///
/// Words are split as a shell splits them: single quotes keep everything,
/// double quotes keep everything but `\"` and `\\`, a backslash outside
/// quotes keeps the next character. Pure: parsing does no I/O, so every
/// error is found, with its line, before anything is mounted.
public struct Scenario: Equatable, Sendable {
    public var steps: [ScenarioStep]

    /// A `crash` step needs a mount that records what was not synced (`crashable`).
    public var crashes: Bool {
        steps.contains { if case .crash = $0.action { true } else { false } }
    }

    /// Whether a `restart` step comes after step `index`.
    public func restarts(after index: Int) -> Bool {
        for later in steps.indices where later > index {
            if case .restart = steps[later].action { return true }
        }
        return false
    }

    public init(steps: [ScenarioStep]) { self.steps = steps }

    /// Parses `text`; `file` names it in errors (`FILE:LINE: reason`).
    public init(parsing text: String, file: String) throws(ScenarioError) {
        var steps: [ScenarioStep] = []
        var number = 0
        for rawLine in FaultRuleFile.lines(text) {
            number += 1
            let words: [String]
            do throws(ScenarioProblem) {
                words = try Self.words(of: rawLine)
            } catch {
                throw ScenarioError(file: file, line: number, problem: error)
            }
            if words.isEmpty { continue }
            do throws(ScenarioProblem) {
                steps.append(try ScenarioStep(words: words, line: number))
            } catch {
                throw ScenarioError(file: file, line: number, problem: error)
            }
        }
        self.steps = steps
    }

    /// The words of one line, quotes removed, the comment dropped.
    static func words(of line: Substring) throws(ScenarioProblem) -> [String] {
        var words: [String] = []
        // By scalar: a quote or a blank followed by a combining mark is one
        // Character, and would not be read as a quote or a blank.
        var current = String.UnicodeScalarView()
        var inWord = false
        var quote: Unicode.Scalar?
        var escaped = false
        for character in line.unicodeScalars {
            if escaped {
                current.append(character)
                escaped = false
                continue
            }
            if let open = quote {
                if character == open {
                    quote = nil
                } else if open == "\"" && character == "\\" {
                    escaped = true
                } else {
                    current.append(character)
                }
                continue
            }
            switch character {
            case "#":
                if inWord { words.append(String(current)) }
                return words
            case " ", "\t", "\r":
                if inWord { words.append(String(current)) }
                current = String.UnicodeScalarView()
                inWord = false
            case "'", "\"":
                quote = character
                inWord = true
            case "\\":
                escaped = true
                inWord = true
            default:
                current.append(character)
                inWord = true
            }
        }
        if quote != nil { throw .unclosedQuote }
        if escaped { throw .trailingBackslash }
        if inWord { words.append(String(current)) }
        return words
    }
}

/// One line of a scenario.
public struct ScenarioStep: Equatable, Sendable, CustomStringConvertible {
    /// The line in the file, from 1.
    public var line: Int
    public var trigger: Trigger
    /// How long a `when` trigger may take to hold before the run fails.
    public var timeout: Milliseconds?
    public var action: Action

    public init(line: Int, trigger: Trigger, timeout: Milliseconds? = nil, action: Action) {
        self.line = line
        self.trigger = trigger
        self.timeout = timeout
        self.action = action
    }

    public enum Trigger: Equatable, Sendable, CustomStringConvertible {
        /// This long after the command started.
        case at(Milliseconds)
        /// Once the device's used space (`device_used`) is above this; `N%` of the capacity.
        case usedAbove(SpaceThreshold)
        /// Once `available` is below this many bytes.
        case availableBelow(UInt64)
        /// Once this path, relative to the container, exists (any kind, not followed).
        case fileExists(String)

        public var description: String {
            switch self {
            case .at(let time): return "at \(time)"
            case .usedAbove(let threshold): return "when used > \(threshold.exactText)"
            case .availableBelow(let bytes): return "when available < \(ByteSize.format(bytes))"
            case .fileExists(let path): return "when file \(path) exists"
            }
        }
    }

    public enum Action: Equatable, Sendable, CustomStringConvertible {
        /// Leave this many bytes available, by raising (or lowering) external usage.
        case squeeze(UInt64)
        case external(UInt64)
        case capacity(UInt64)
        /// `nil`: all.
        case purge(UInt64?)
        case pin(String)
        case unpin(String)
        /// The arguments of `purgefs fault add MOUNTPOINT ARGS...`.
        case fault([String])
        /// A power loss: the command's process group gets SIGKILL, then `purgefs crash`.
        case crash
        /// The command starts again (after a crash: on the crashed state).
        case restart
        /// `cloud offline`, `cloud online`, `cloud touch PATH`: the arguments of `purgefs cloud` around MOUNTPOINT.
        case cloud(String, path: String?)

        public var description: String {
            switch self {
            case .squeeze(let bytes): return "squeeze \(ByteSize.format(bytes))"
            case .external(let bytes): return "external \(ByteSize.format(bytes))"
            case .capacity(let bytes): return "capacity \(ByteSize.format(bytes))"
            case .purge(let bytes): return "purge " + (bytes.map(ByteSize.format) ?? "all")
            case .pin(let path): return "pin \(path)"
            case .unpin(let path): return "unpin \(path)"
            case .fault(let arguments): return (["fault"] + arguments).joined(separator: " ")
            case .crash: return "crash"
            case .restart: return "restart"
            case .cloud(let verb, let path): return "cloud \(verb)" + (path.map { " " + $0 } ?? "")
            }
        }
    }

    /// The step as it can be written again (normalised: sizes in binary units).
    public var description: String {
        ([trigger.description] + (timeout.map { ["timeout \($0)"] } ?? []) + [action.description]).joined(separator: " ")
    }

    init(words: [String], line: Int) throws(ScenarioProblem) {
        self.line = line
        var rest = words[...]
        trigger = try Self.trigger(&rest)
        if rest.first == "timeout" {
            if case .at = trigger { throw .timeoutWithAt }
            rest.removeFirst()
            guard let text = rest.popFirst() else { throw .missing("a DURATION after timeout") }
            timeout = try Self.value(text, "timeout") { (text) throws(ValueError) in try Milliseconds(parsing: text, allowZero: false) }
        }
        action = try Self.action(&rest)
    }

    private static func trigger(_ words: inout ArraySlice<String>) throws(ScenarioProblem) -> Trigger {
        let first = words.removeFirst()
        switch first {
        case "at":
            guard let text = words.popFirst() else { throw .missing("a DURATION after at") }
            return .at(try value(text, "at") { (text) throws(ValueError) in try Milliseconds(parsing: text, allowZero: true) })
        case "when":
            guard let subject = words.popFirst() else { throw .missing("used, available or file after when") }
            switch subject {
            case "used":
                try expect(">", after: "when used", &words)
                guard let text = words.popFirst() else { throw .missing("a SIZE or N% after when used >") }
                return .usedAbove(try value(text, "when used >") { (text) throws(ValueError) in try SpaceThreshold(parsing: text) })
            case "available":
                try expect("<", after: "when available", &words)
                guard let text = words.popFirst() else { throw .missing("a SIZE after when available <") }
                return .availableBelow(try value(text, "when available <") { (text) throws(ValueError) in try ByteSize(parsing: text).bytes })
            case "file":
                guard let path = words.popFirst() else { throw .missing("a PATH after when file") }
                let normalised = try relative(path)
                try expect("exists", after: "when file PATH", &words)
                return .fileExists(normalised)
            default:
                throw .unknownCondition(subject)
            }
        default:
            throw .unknownTrigger(first)
        }
    }

    private static func action(_ words: inout ArraySlice<String>) throws(ScenarioProblem) -> Action {
        guard let verb = words.popFirst() else { throw .missing("an action (squeeze, external, capacity, purge, pin, unpin, fault, crash, restart, cloud)") }
        func one(_ what: String) throws(ScenarioProblem) -> String {
            guard let word = words.popFirst() else { throw .missing("\(what) after \(verb)") }
            return word
        }
        let action: Action
        switch verb {
        case "squeeze":
            action = .squeeze(try value(try one("a SIZE"), verb) { (text) throws(ValueError) in try ByteSize(parsing: text).bytes })
        case "external":
            action = .external(try value(try one("a SIZE"), verb, CapacityModel.external(parsing:)))
        case "capacity":
            action = .capacity(try value(try one("a SIZE"), verb, CapacityModel.capacity(parsing:)))
        case "purge":
            let text = try one("a SIZE or all")
            if text == "all" {
                action = .purge(nil)
            } else {
                let bytes = try value(text, verb) { (text) throws(ValueError) in try ByteSize(parsing: text).bytes }
                if bytes == 0 { throw .badValue(what: verb, value: text, reason: .zero) }
                action = .purge(bytes)
            }
        case "pin":
            action = .pin(try relative(try one("a PATH")))
        case "unpin":
            action = .unpin(try relative(try one("a PATH")))
        case "fault":
            guard !words.isEmpty else { throw .missing("the rule after fault (as purgefs fault add takes it, without MOUNTPOINT)") }
            action = .fault(Array(words))
            words.removeAll()
        case "crash":
            action = .crash
        case "restart":
            action = .restart
        case "cloud":
            let what = try one("offline, online or touch PATH")
            switch what {
            case "offline", "online": action = .cloud(what, path: nil)
            case "touch": action = .cloud(what, path: try relative(try one("a PATH")))
            default: throw .unknownAction("cloud " + what)
            }
        default:
            throw .unknownAction(verb)
        }
        if let extra = words.first { throw .unexpected(extra) }
        return action
    }

    private static func expect(_ word: String, after what: String, _ words: inout ArraySlice<String>) throws(ScenarioProblem) {
        guard let next = words.popFirst() else { throw .missing("'\(word)' after \(what)") }
        guard next == word else { throw .expected(word, after: what, got: next) }
    }

    private static func value<T>(_ text: String, _ what: String, _ read: (String) throws(ValueError) -> T) throws(ScenarioProblem) -> T {
        do throws(ValueError) {
            return try read(text)
        } catch {
            throw .badValue(what: what, value: text, reason: error)
        }
    }

    private static func relative(_ path: String) throws(ScenarioProblem) -> String {
        do throws(RelativePathProblem) {
            return try RelativePath.normalise(path)
        } catch {
            throw .badPath(path, error)
        }
    }
}

/// A duration in milliseconds, read from `500ms`, `2s`, `1.5m`, `1h` (a
/// plain number is seconds).
public struct Milliseconds: Equatable, Comparable, Hashable, Sendable, CustomStringConvertible {
    public var value: UInt64

    public init(_ value: UInt64) { self.value = value }

    public init(parsing text: String, allowZero: Bool) throws(ValueError) {
        if text.isEmpty { throw .empty }
        if text.first == "-" { throw .negative }
        guard let (number, rest) = try DecimalNumber.leading(Substring(text)) else { throw .notADuration }
        let scale: UInt64
        switch rest {
        case "ms": scale = 1
        case "", "s": scale = 1_000
        case "m": scale = 60_000
        case "h": scale = 3_600_000
        default: throw .notADuration
        }
        let value = try number.scaled(by: scale)
        if value == 0 && !allowZero { throw .zero }
        self.value = value
    }

    public static func < (lhs: Milliseconds, rhs: Milliseconds) -> Bool { lhs.value < rhs.value }

    public var description: String {
        if value != 0, value % 3_600_000 == 0 { return "\(value / 3_600_000)h" }
        if value != 0, value % 60_000 == 0 { return "\(value / 60_000)m" }
        if value % 1_000 == 0 { return "\(value / 1_000)s" }
        return "\(value)ms"
    }
}

/// What is wrong with one line of a scenario.
public enum ScenarioProblem: Error, Equatable, Sendable, CustomStringConvertible {
    case unknownTrigger(String)
    case unknownCondition(String)
    case unknownAction(String)
    case missing(String)
    case expected(String, after: String, got: String)
    case unexpected(String)
    case badValue(what: String, value: String, reason: ValueError)
    case badPath(String, RelativePathProblem)
    case timeoutWithAt
    case unclosedQuote
    case trailingBackslash

    public var description: String {
        switch self {
        case .unknownTrigger(let word):
            return "unknown trigger '\(word)' (a step starts with at DURATION or when ...)"
        case .unknownCondition(let word):
            return "unknown condition 'when \(word)' (when used >, when available <, when file PATH exists)"
        case .unknownAction(let word) where word.hasPrefix("cloud "):
            return "unknown action '\(word)' (cloud offline, cloud online, cloud touch PATH)"
        case .unknownAction(let word):
            return "unknown action '\(word)' (squeeze, external, capacity, purge, pin, unpin, fault, crash, restart, cloud)"
        case .missing(let what):
            return "\(what) is missing"
        case .expected(let word, let after, let got):
            return "expected '\(word)' after \(after), got '\(got)'"
        case .unexpected(let word):
            return "unexpected '\(word)' after the action"
        case .badValue(let what, let value, let reason):
            return "\(what) \(value): \(reason)"
        case .badPath(let path, let problem):
            return "\(path): \(problem) (a PATH is relative to the container)"
        case .timeoutWithAt:
            return "timeout applies to when conditions, not to at"
        case .unclosedQuote:
            return "a quote is not closed"
        case .trailingBackslash:
            return "the line ends with a backslash"
        }
    }
}

/// A scenario line that cannot be read: `FILE:LINE: reason`.
public struct ScenarioError: Error, Equatable, Sendable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var problem: ScenarioProblem

    public init(file: String, line: Int, problem: ScenarioProblem) {
        self.file = file
        self.line = line
        self.problem = problem
    }

    public var description: String { "\(file):\(line): \(problem)" }
}
