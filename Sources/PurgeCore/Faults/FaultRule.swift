/// One fault rule: which calls it matches (an operation, a path pattern,
/// optionally the calling process), what it does to them (fail with an
/// errno, delay, or write only part of the data) and when (after N matching
/// calls, at most M times, with a probability drawn from a seed).
///
/// A rule is written as the arguments of `purgefs fault add` without the
/// mount point, the same in a rules file (`faults=FILE`) and in a scenario's
/// `fault` step; `arguments` gives them back in canonical form.
public struct FaultRule: Equatable, Sendable {
    public var operation: FaultOperation
    public var path: FaultGlob
    public var action: FaultAction
    /// Drawn for each call that could fire; 1 fires on every one.
    public var probability: Double = 1
    /// Matching calls let through before the rule may fire.
    public var after: UInt64 = 0
    /// Firings before the rule stops; nil for no limit.
    public var times: UInt64?
    public var process: FaultProcess?
    /// The seed of the probability draws; nil until the rule is added
    /// (`FaultBook.add` picks one, so every listed rule has its seed).
    public var seed: UInt64?

    public init(operation: FaultOperation, path: FaultGlob, action: FaultAction) {
        self.operation = operation
        self.path = path
        self.action = action
    }

    /// The flags of the rule reference, for help texts.
    public static let usage =
        "--op OP --path GLOB (--errno NAME | --delay DURATION | --short-write | --offline) [--probability P] [--after N] [--times M] [--pid PID | --comm NAME] [--seed S]"

    /// Parses the arguments of `fault add` (without the mount point).
    public init(arguments: [String]) throws(FaultRuleError) {
        var values: [String: String] = [:]
        var shortWrite = false
        var offline = false
        var index = 0
        while index < arguments.count {
            let flag = arguments[index]
            index += 1
            if flag == "--short-write" || flag == "--offline" {
                if (flag == "--offline" ? offline : shortWrite) { throw FaultRuleError("\(flag) given twice") }
                if flag == "--offline" { offline = true } else { shortWrite = true }
                continue
            }
            guard Self.valueFlags.contains(flag) else {
                throw FaultRuleError(flag.hasPrefix("-")
                    ? "unknown flag \(flag) (a rule is \(Self.usage))"
                    : "unexpected argument '\(flag)' (a rule is \(Self.usage))")
            }
            guard index < arguments.count else { throw FaultRuleError("\(flag) needs a value") }
            if values[flag] != nil { throw FaultRuleError("\(flag) given twice") }
            // A rule travels as one line (fault add, fault list, a rules file).
            if arguments[index].unicodeScalars.contains("\n") { throw FaultRuleError("\(flag): a value cannot hold a line break") }
            values[flag] = arguments[index]
            index += 1
        }
        guard let op = values["--op"] else { throw FaultRuleError("--op is required (one of: \(FaultOperation.names))") }
        guard let glob = values["--path"] else { throw FaultRuleError("--path is required (a pattern such as 'Documents/*.db', or '**')") }
        let operation = try FaultOperation.parse(op)
        let path = try FaultGlob(parsing: glob)
        let actions = [values["--errno"] != nil, values["--delay"] != nil, shortWrite, offline].filter { $0 }.count
        guard actions == 1 else {
            throw FaultRuleError(actions == 0
                ? "give one action: --errno NAME, --delay DURATION, --short-write or --offline"
                : "give one action only: --errno, --delay, --short-write or --offline")
        }
        let action: FaultAction
        if let name = values["--errno"] {
            action = .fail(try FaultAction.errnoName(parsing: name))
        } else if let text = values["--delay"] {
            action = .delay(nanoseconds: try FaultAction.delay(parsing: text))
        } else if offline {
            guard operation.isCloud else {
                throw FaultRuleError("--offline applies to the cloud tier's calls only: give --op upload, download, remote-delete or remote-list")
            }
            action = .offline
        } else {
            guard operation == .write else {
                throw FaultRuleError("--short-write applies to writes only: give --op write")
            }
            action = .shortWrite
        }
        self.init(operation: operation, path: path, action: action)
        if let text = values["--probability"] {
            guard let value = Double(text), value.isFinite, value >= 0, value <= 1, !text.hasPrefix("+") else {
                throw FaultRuleError("--probability '\(text)': not a number from 0 to 1")
            }
            probability = value
        }
        if let text = values["--after"] { after = try Self.count(text, flag: "--after", least: 0) }
        if let text = values["--times"] { times = try Self.count(text, flag: "--times", least: 1) }
        if values["--pid"] != nil && values["--comm"] != nil { throw FaultRuleError("give --pid or --comm, not both") }
        if operation.isCloud && (values["--pid"] != nil || values["--comm"] != nil) {
            throw FaultRuleError("--op \(operation.rawValue) is the cloud tier's own call: no process makes it, so --pid and --comm do not apply")
        }
        if let text = values["--pid"] {
            guard let pid = Int32(text), pid > 0 else { throw FaultRuleError("--pid '\(text)': not a process ID") }
            process = .pid(pid)
        }
        if let name = values["--comm"] {
            guard !name.isEmpty, name.utf8.count <= FaultProcess.commandLength else {
                throw FaultRuleError("--comm '\(name)': a command name has 1 to \(FaultProcess.commandLength) bytes (the kernel's comm)")
            }
            process = .command(name)
        }
        if let text = values["--seed"] {
            guard let value = UInt64(text) else { throw FaultRuleError("--seed '\(text)': not a whole number from 0 to 2^64-1") }
            seed = value
        }
    }

    private static let valueFlags: Set<String> =
        ["--op", "--path", "--errno", "--delay", "--probability", "--after", "--times", "--pid", "--comm", "--seed"]

    private static func count(_ text: String, flag: String, least: UInt64) throws(FaultRuleError) -> UInt64 {
        guard let value = UInt64(text), value >= least, !text.hasPrefix("+") else {
            throw FaultRuleError("\(flag) '\(text)': not a whole number\(least > 0 ? " from \(least)" : "")")
        }
        return value
    }

    /// The rule's arguments in canonical order, defaults left out.
    public var arguments: [String] {
        var words = ["--op", operation.rawValue, "--path", path.text]
        switch action {
        case .fail(let name): words += ["--errno", name]
        case .delay(let nanoseconds): words += ["--delay", FaultAction.durationText(nanoseconds)]
        case .shortWrite: words.append("--short-write")
        case .offline: words.append("--offline")
        }
        if probability != 1 { words += ["--probability", String(probability)] }
        if after != 0 { words += ["--after", String(after)] }
        if let times { words += ["--times", String(times)] }
        switch process {
        case .pid(let pid): words += ["--pid", String(pid)]
        case .command(let name): words += ["--comm", name]
        case nil: break
        }
        if let seed { words += ["--seed", String(seed)] }
        return words
    }

    /// The arguments as one line of a rules file, quoted where needed.
    public var line: String {
        arguments.map(FaultRuleFile.quoted).joined(separator: " ")
    }
}

/// What a rule does to a call it fires on.
public enum FaultAction: Equatable, Sendable {
    /// Fails the call with this errno (its name, e.g. `EIO`).
    case fail(String)
    /// Holds the call this long, then lets it run.
    case delay(nanoseconds: UInt64)
    /// Writes only part of the data and returns the count written.
    case shortWrite
    /// A call of the cloud tier fails at once, as when the network is down.
    case offline

    /// The errno names a rule may give: those a storage call can plausibly fail with.
    public static let errnoNames = [
        "EPERM", "ENOENT", "EINTR", "EIO", "ENXIO", "EBADF", "EAGAIN", "ENOMEM", "EACCES", "EFAULT", "EBUSY",
        "EEXIST", "EXDEV", "ENODEV", "ENOTDIR", "EISDIR", "EINVAL", "ENFILE", "EMFILE", "ETXTBSY", "EFBIG",
        "ENOSPC", "ESPIPE", "EROFS", "EMLINK", "ERANGE", "EDEADLK", "ENAMETOOLONG", "ENOLCK", "ENOSYS",
        "ENOTEMPTY", "ELOOP", "ENODATA", "ETIME", "EOVERFLOW", "EBADMSG", "EOPNOTSUPP", "ETIMEDOUT", "ESTALE",
        "EDQUOT", "ECANCELED", "ENOTCONN", "EUCLEAN", "EREMOTEIO", "ENOMEDIUM",
    ]

    public static func errnoName(parsing text: String) throws(FaultRuleError) -> String {
        let name = text.uppercased()
        guard errnoNames.contains(name) else {
            throw FaultRuleError("--errno '\(text)': unknown errno name (one of: \(errnoNames.joined(separator: ", ")))")
        }
        return name
    }

    /// The longest delay a rule may give.
    public static let longestDelay: UInt64 = 3_600_000_000_000

    /// A duration: a number (decimals allowed) and a unit, `us`, `ms`, `s`
    /// or `m` (`250ms`, `1.5s`, `2m`), above zero and at most an hour.
    public static func delay(parsing text: String) throws(FaultRuleError) -> UInt64 {
        // Read exactly (DecimalNumber), not through Double: 2.11s is 2,110,000,000 ns, not one less.
        let units: [(String, UInt64)] = [("us", 1_000), ("ms", 1_000_000), ("s", 1_000_000_000), ("m", 60_000_000_000)]
        for (unit, scale) in units where text.hasSuffix(unit) {
            guard let (number, rest) = try? DecimalNumber.leading(text.dropLast(unit.count)), rest.isEmpty else { break }
            let nanoseconds = (try? number.scaled(by: scale)) ?? .max
            guard nanoseconds >= 1, nanoseconds <= longestDelay else {
                throw FaultRuleError("--delay '\(text)': a delay is above zero and at most 1 hour")
            }
            return nanoseconds
        }
        throw FaultRuleError("--delay '\(text)': not a duration (a number and a unit: 500us, 250ms, 1.5s, 2m)")
    }

    /// A delay in the largest unit that divides it.
    static func durationText(_ nanoseconds: UInt64) -> String {
        if nanoseconds % 60_000_000_000 == 0 { return "\(nanoseconds / 60_000_000_000)m" }
        if nanoseconds % 1_000_000_000 == 0 { return "\(nanoseconds / 1_000_000_000)s" }
        if nanoseconds % 1_000_000 == 0 { return "\(nanoseconds / 1_000_000)ms" }
        if nanoseconds % 1_000 == 0 { return "\(nanoseconds / 1_000)us" }
        // Exact decimals (nanoseconds are thousandths of a microsecond), as delay(parsing:) reads them.
        let digits = String(nanoseconds % 1_000)
        let fraction = (String(repeating: "0", count: 3 - digits.count) + digits).reversed().drop { $0 == "0" }.reversed()
        return "\(nanoseconds / 1_000).\(String(fraction))us"
    }

    /// A short description for logs and tables: `EIO`, `delay 250ms`, `short write`.
    public var summary: String {
        switch self {
        case .fail(let name): return name
        case .delay(let nanoseconds): return "delay " + Self.durationText(nanoseconds)
        case .shortWrite: return "short write"
        case .offline: return "offline"
        }
    }
}

/// The calling process a rule is limited to.
public enum FaultProcess: Equatable, Sendable {
    case pid(Int32)
    /// The command name as the kernel keeps it (`/proc/PID/comm`).
    case command(String)

    /// The kernel's `TASK_COMM_LEN` less its NUL.
    public static let commandLength = 15
}
