@testable import PurgeCommand
@testable import PurgeCore
@testable import PurgeEngines
@testable import PurgeFS

/// One parser of user input, fed whole inputs by the seeded tests
/// (`ParserFuzzTests`, `CommandParserFuzzTests`) and by libFuzzer
/// (`scripts/fuzz`). `check` parses one input as the command or the
/// daemon would and returns what broke, or nil; a trap (overflow, index out
/// of range, precondition) kills the process, which is what both runners
/// look for first. Each input is bytes: a file's content, or for the command
/// line forms arguments separated by NUL bytes.
public enum ParserFuzzTarget: String, CaseIterable, Sendable {
    /// `-o` lists: each line one `-o` argument, split as libfuse splits it, then parsed and validated.
    case mountOptions = "mount-options"
    /// SIZE, DURATION, thresholds, capacity, external, a fault's delay.
    case values
    /// `purgefs fault add MOUNTPOINT ARGS...`: the arguments after the mount point.
    case faultRule = "fault-rule"
    /// `faults=FILE`: a rules file.
    case faultRulesFile = "fault-rules-file"
    /// `--path GLOB`, and its match against short names.
    case faultGlob = "fault-glob"
    /// `purgefs run --scenario FILE`.
    case scenario
    /// `device/NAME/settings` and `device/NAME/members/KEY`.
    case deviceRecords = "device-records"
    /// `device/NAME/requests/REQUEST` and its `.done` answer.
    case deviceRequests = "device-requests"
    /// The cloud tier's manifest (`cloud` in the state directory).
    case cloudManifest = "cloud-manifest"
    /// The block maps of sparse clone members (`block-maps` and its journal in the state directory).
    case blockMaps = "block-maps"
    /// A JSON report given to `purgefs report` or `explore --replay`.
    case report
    /// The recording beside an explore report (`initial` and the operations log), as `--replay` reads it.
    case replayRecording = "replay-recording"
    /// A request head sent to `purgefs ui`.
    case uiRequest = "ui-request"

    /// The targets whose parsers live in PurgeCore (the rest in PurgeCommand).
    public var isCore: Bool { ![.report, .replayRecording, .uiRequest].contains(self) }

    /// Parses `input`; a description of the broken invariant, or nil.
    public func check(_ input: [UInt8]) -> String? {
        let text = String(decoding: input, as: UTF8.self)
        switch self {
        case .mountOptions: return Self.mountOptions(text)
        case .values: return Self.values(text)
        case .faultRule: return Self.faultRule(Self.arguments(input))
        case .faultRulesFile: return Self.faultRulesFile(text)
        case .faultGlob: return Self.faultGlob(text)
        case .scenario: return Self.scenario(text)
        case .deviceRecords: return Self.deviceRecords(input)
        case .deviceRequests: return Self.deviceRequests(input)
        case .cloudManifest: return Self.cloudManifest(input)
        case .blockMaps: return Self.blockMaps(input)
        case .report: return Self.report(text)
        case .replayRecording: return Self.replayRecording(text)
        case .uiRequest: return Self.uiRequest(input)
        }
    }

    /// Arguments as a command line has them: NUL-separated (none can hold a NUL).
    static func arguments(_ input: [UInt8]) -> [String] {
        input.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    }

    /// An error shown to a user is one non-empty line, unless the input
    /// it quotes held a line break itself.
    /// (A line break is a newline byte: other control characters a file's line
    /// may hold are quoted as they are.)
    static func oneLine(_ error: some Error, input: String, _ what: String) -> String? {
        let message = "\(error)"
        if message.isEmpty { return "\(what): an empty error" }
        if message.utf8.contains(0x0A) && !input.utf8.contains(0x0A) {
            return "\(what): an error of more than one line: \(message)"
        }
        return nil
    }

    // MARK: PurgeCore's parsers

    static func mountOptions(_ text: String) -> String? {
        let arguments = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for argument in arguments {
            let items = OptionList.split(argument)
            let again = OptionList.split(OptionList.joined(items))
            if again != items { return "mount options: \(items) joined and split again is \(again)" }
        }
        do throws(OptionError) {
            let options = try MountOptions.parse(arguments)
            // What the daemon derives from options at mount.
            _ = CapacityModel(options: options)
            _ = DeviceSettings(options: options, backing: 1).encoded
        } catch {
            return oneLine(error, input: text, "mount options")
        }
        return nil
    }

    static func values(_ text: String) -> String? {
        for word in text.split(whereSeparator: { $0 == "\n" || $0 == "\0" }).map(String.init) + [text] {
            if let failure = value(word) { return failure }
        }
        return nil
    }

    private static func value(_ text: String) -> String? {
        func roundTrip<T: Equatable>(_ what: String, _ parse: (String) throws -> T, _ print: (T) -> String) -> String? {
            let value: T
            do { value = try parse(text) } catch { return oneLine(error, input: text, what) }
            let printed = print(value)
            guard let again = try? parse(printed), again == value else {
                return "\(what): '\(text)' printed as '\(printed)' does not read back the same"
            }
            return nil
        }
        return roundTrip("SIZE", { try ByteSize(parsing: $0) }, { String($0.bytes) })
            ?? roundTrip("DURATION", { try DurationSeconds(parsing: $0) }, \.description)
            ?? roundTrip("scenario DURATION", { try Milliseconds(parsing: $0, allowZero: true) }, \.description)
            ?? roundTrip("threshold", { try SpaceThreshold(parsing: $0) }, \.exactText)
            ?? roundTrip("capacity", { try CapacityModel.capacity(parsing: $0) }, { String($0) })
            ?? roundTrip("external", { try CapacityModel.external(parsing: $0) }, { String($0) })
            ?? roundTrip("--delay", { try FaultAction.delay(parsing: $0) }, FaultAction.durationText)
    }

    static func faultRule(_ arguments: [String]) -> String? {
        let rule: FaultRule
        do throws(FaultRuleError) { rule = try FaultRule(arguments: arguments) } catch {
            return oneLine(error, input: arguments.joined(separator: " "), "fault rule")
        }
        guard let again = try? FaultRule(arguments: rule.arguments), again == rule else {
            return "fault rule: \(arguments) printed as \(rule.arguments) does not read back the same"
        }
        guard let fromLine = try? FaultRuleFile.parse(rule.line), fromLine == [rule] else {
            return "fault rule: \(arguments) written as the line \(rule.line) does not read back the same"
        }
        return nil
    }

    static func faultRulesFile(_ text: String) -> String? {
        let rules: [FaultRule]
        do throws(FaultRuleError) { rules = try FaultRuleFile.parse(text) } catch {
            return oneLine(error, input: "", "rules file")
        }
        for rule in rules {
            if let failure = faultRule(rule.arguments) { return failure }
        }
        for line in FaultRuleFile.lines(text) {
            guard let words = try? FaultRuleFile.words(of: line) else { continue }
            let quoted = words.map(FaultRuleFile.quoted).joined(separator: " ")
            guard let again = try? FaultRuleFile.words(of: quoted[...]), again == words else {
                return "rules file: the words \(words) quoted as \(quoted) do not read back the same"
            }
        }
        return nil
    }

    /// Names matched: up to a path's length (PATH_MAX); the matcher takes
    /// time proportional to the pattern times the path.
    static let longestMatchedName = 4096

    static func faultGlob(_ text: String) -> String? {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let pattern = String(lines[0])
        let glob: FaultGlob
        do throws(FaultRuleError) { glob = try FaultGlob(parsing: pattern) } catch {
            return oneLine(error, input: pattern, "--path")
        }
        for name in lines.dropFirst() where name.count <= longestMatchedName {
            _ = glob.matches(String(name))
        }
        // A pattern without special characters matches itself only.
        if !pattern.contains(where: { "*?[]\\".contains($0) }) {
            if !glob.matches(pattern) { return "--path '\(pattern)' does not match itself" }
            if glob.matches(pattern + "x") { return "--path '\(pattern)' matches '\(pattern)x'" }
        }
        if pattern.count <= longestMatchedName, let anything = try? FaultGlob(parsing: "**"), !anything.matches(pattern) {
            return "--path '**' does not match '\(pattern)'"
        }
        return nil
    }

    static func scenario(_ text: String) -> String? {
        let scenario: Scenario
        do throws(ScenarioError) { scenario = try Scenario(parsing: text, file: "fuzz.scenario") } catch {
            return oneLine(error, input: "", "scenario")
        }
        for step in scenario.steps {
            _ = step.description
            // A fault step's rule is read when the step runs, as `fault add` reads it.
            if case .fault(let arguments) = step.action, let failure = faultRule(arguments) { return failure }
        }
        return nil
    }

    static func deviceRecords(_ input: [UInt8]) -> String? {
        do throws(DeviceRecordError) {
            let settings = try DeviceSettings(reading: input)
            guard DeviceSettings(decoding: settings.encoded) == settings else {
                return "device settings: \(settings) encoded does not decode the same"
            }
            _ = settings.model
        } catch {
            if let failure = oneLine(error, input: "", "device settings") { return failure }
        }
        do throws(DeviceRecordError) {
            let member = try DeviceMember(reading: input)
            guard DeviceMember(decoding: member.encoded) == member else {
                return "device member: \(member) encoded does not decode the same"
            }
            _ = member.plannerMember(quota: member.cacheQuota ?? 0)
        } catch {
            if let failure = oneLine(error, input: "", "device member") { return failure }
        }
        return nil
    }

    /// As the member a request is addressed to reads it, and as its poster reads the answer.
    static func deviceRequests(_ input: [UInt8]) -> String? {
        do throws(DeviceRecordError) {
            _ = try SharedDevice.request(reading: input)
        } catch {
            if let failure = oneLine(error, input: "", "device request") { return failure }
        }
        _ = try? DeviceRecordLines(input).bytes("freed")
        return nil
    }

    static func cloudManifest(_ input: [UInt8]) -> String? {
        guard let manifest = CloudManifest(decoding: input) else { return nil }
        guard CloudManifest(decoding: manifest.encoded) == manifest else {
            return "cloud manifest: encoded does not decode the same"
        }
        return nil
    }

    /// Decoded maps encode to what decodes the same; a refusal is one line;
    /// the check and replay run over whatever was accepted.
    static func blockMaps(_ input: [UInt8]) -> String? {
        let book: BlockMapBook
        do throws(BlockMapRecord.Malformed) {
            book = try BlockMapBook.decode(input)
        } catch {
            return oneLine(error, input: "", "block maps")
        }
        guard (try? BlockMapBook.decode(book.encoded)) == book else { return "block maps: encoded does not decode the same" }
        let maps = book.durable.mapValues(\.map)
        _ = BlockShareCheck.findings(maps: maps, anchors: [:], baseLinks: [])
        let anchors = maps.mapValues { BlockShareCheck.Anchor(size: $0.sharedLength / 2, data: [0..<$0.sharedLength]) }
        let repairs = BlockShareCheck.replay(book: book, anchors: anchors, linkedMembers: [], baseLinks: [])
        var repaired = book
        do throws(BlockMapRecord.Malformed) {
            try repaired.applyDurable(repairs.records)
        } catch {
            return "block maps: replay's repairs do not apply: \(error)"
        }
        return nil
    }

    // MARK: PurgeCommand's parsers

    static func report(_ text: String) -> String? {
        if let json = JSONValue(parsing: text) {
            guard JSONValue(parsing: json.pretty) == json else { return "JSON: pretty-printed does not parse back the same" }
        }
        do throws(CommandExit) {
            _ = try ReportCommand.page(for: text, named: "fuzz.json").text
        } catch {
            return oneLine(error, input: "", "report")
        }
        return nil
    }

    /// `initial`, a line `--`, then the operations log.
    static func replayRecording(_ text: String) -> String? {
        let parts = text.split(separator: "\n--\n", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let initial = ExploreReplay.loadInitial(String(parts[0])),
              let records = try? RecordedOperation.parse(parts[1]) else { return nil }
        let exploration = CrashExploration(initial: initial, records: records)
        // --replay refuses a log that names more than its data file holds: 1 MiB here.
        guard exploration.dataNeeded <= 1 << 20 else { return nil }
        let points = min(exploration.operationCount, 8)
        guard points > 0 else { return nil }
        _ = exploration.states((1...points).map { CrashExploration.StateID(point: $0, variant: .namesKept) })
        return nil
    }

    static func uiRequest(_ input: [UInt8]) -> String? {
        guard let end = UIServer.endOfHead(input) else { return nil }
        guard end <= input.count else { return "ui: the head ends at \(end), past the \(input.count) bytes received" }
        _ = UIServer.parse(Array(input[..<end]))
        return nil
    }
}
