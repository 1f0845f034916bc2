import Glibc
import PurgeCore
import PurgeSys

/// What `purgefs explore` found, as text and as JSON. The JSON's shape is
/// fixed (pages draw it): `states`, `passed`, `failed`, `sampled`,
/// `operations`, `interrupted`, `results` (`point`, `variant`, `passed`, in
/// exploration order) and `failures` (`point`, `variant`, `operation`,
/// `lastDurable`, `lost` (its first items), `lostCount`, `stderr`, `group`,
/// `kind`) and `groups` (`ExploreGroups`); other fields may be added.
public struct ExploreReport {
    var container: String
    var command: [String]
    var check: String
    var operations: Int
    /// States there were before sampling.
    var allStates: Int
    /// States chosen to check (all of them, or a sample).
    var chosenStates: Int
    var sampled: Bool
    var results: [ExploreChecker.Result]
    var seconds: Double
    var commandEnded: String
    /// The command's exit status (128 + N when signal N killed it); nil when it was not started.
    var commandStatus: Int32?
    var commandTimedOut = false
    /// The last lines of the command's stderr.
    var commandStderr = ""
    var fingerprint: String
    var torn: Bool
    /// The models explored (each result names those under which its state can happen).
    var models: [CrashFilesystemModel]
    var recording: String?
    /// The signal that ended the exploration early.
    var interruptedBy: Int32?
    /// `--golden CMD`, and the lines the command printed (its acknowledgments).
    var golden: String?
    var acknowledgments: Int?
    /// What the user should know about how the exploration was made.
    var warnings: [String] = []

    public var states: Int { results.count }
    public var failed: Int { results.filter { !$0.passed }.count }
    public var passed: Int { states - failed }
    var interrupted: Bool { interruptedBy != nil }
    /// The command did not end well: a finding of its own.
    var commandFailed: Bool { commandTimedOut || commandStatus != 0 }

    /// 128 + the signal when interrupted; else 1 when a state failed or the
    /// command did not exit 0; else 0.
    public var exitStatus: Int32 {
        if let interruptedBy { return 128 + interruptedBy }
        return failed > 0 || commandFailed ? 1 : 0
    }

    /// Lines of the command's stderr the report keeps, and characters at most.
    static let stderrLines = 20, stderrCharacters = 4000

    /// The last `stderrLines` lines of the file at `path` (at most
    /// `stderrCharacters`, read from its end).
    static func tail(of path: String) -> String {
        guard let file = try? FileDescriptor.open(path: path, flags: O_RDONLY | O_CLOEXEC) else { return "" }
        defer { file.closeQuietly() }
        let size = (try? file.status().st_size).map(Int64.init) ?? 0
        let start = max(0, size - Int64(stderrCharacters))
        var bytes = [UInt8](repeating: 0, count: Int(size - start))
        let count = bytes.withUnsafeMutableBytes { (buffer) -> Int in (try? file.read(into: buffer, at: start)) ?? 0 }
        var text = String(decoding: bytes[..<count], as: UTF8.self)
        if start > 0, let newline = text.firstIndex(of: "\n") { text = String(text[text.index(after: newline)...]) }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let kept = lines.last == "" ? lines.dropLast() : lines[...]
        return kept.suffix(stderrLines).joined(separator: "\n")
    }

    /// The failed states in groups (`ExploreGroups`).
    var grouped: ExploreGroups { ExploreGroups(results) }

    public var json: JSONValue {
        let grouped = self.grouped
        let groups = grouped.numbers
        let failures: [JSONValue] = results.enumerated().compactMap { index, item in
            guard let failure = item.failure else { return nil }
            return .object([
                ("point", .integer(item.id.point)),
                ("variant", .string(item.id.variant.description)),
                ("state", .string(item.id.description)),
                ("operation", .string(failure.operation)),
                ("lastDurable", failure.lastDurable.map { .string($0.text) } ?? .null),
                ("lastDurablePoint", failure.lastDurable.map { .integer($0.point) } ?? .null),
                ("lost", .array(failure.lost.map(JSONValue.string))),
                ("lostCount", .integer(failure.lostCount)),
                ("stderr", .string(item.stderr)),
                ("group", .integer(groups[index] ?? 0)),
                ("models", .array(modelsOf(index).map { .string($0.rawValue) })),
                ("kind", .string(failure.kind.rawValue)),
            ])
        }
        return .object([
            ("container", .string(container)),
            ("command", .array(command.map(JSONValue.string))),
            ("check", check.isEmpty ? .null : .string(check)),
            ("golden", golden.map(JSONValue.string) ?? .null),
            ("acknowledgments", acknowledgments.map { .integer($0) } ?? .null),
            ("warnings", .array(warnings.map(JSONValue.string))),
            ("commandEnded", .string(commandEnded)),
            ("commandStatus", commandStatus.map { .integer(Int($0)) } ?? .null),
            ("commandTimedOut", .bool(commandTimedOut)),
            ("commandStderr", .string(commandStderr)),
            ("operations", .integer(operations)),
            ("states", .integer(states)),
            ("passed", .integer(passed)),
            ("failed", .integer(failed)),
            ("sampled", .bool(sampled)),
            ("statesInAll", .integer(allStates)),
            ("statesChosen", .integer(chosenStates)),
            ("interrupted", .bool(interrupted)),
            ("interruptedBy", interruptedBy.map { .string(TerminationRequests.name(of: $0)) } ?? .null),
            ("torn", .bool(torn)),
            models.count == 1 ? ("model", .string(models[0].rawValue)) : ("models", .array(models.map { .string($0.rawValue) })),
            ("seconds", .number(Self.format(seconds))),
            ("fingerprint", .string(fingerprint)),
            ("recording", recording.map(JSONValue.string) ?? .null),
            ("results", .array(results.map { item in
                .object([("point", .integer(item.id.point)), ("variant", .string(item.id.variant.description)),
                         ("passed", .bool(item.passed))])
            })),
            ("failures", .array(failures)),
            ("groups", .array(grouped.groups.map { group in
                .object([
                    ("group", .integer(group.number)),
                    ("kind", .string(group.kind.rawValue)),
                    ("count", .integer(group.members.count)),
                    ("operation", .string(group.operation)),
                    ("lastDurable", group.lastDurable.map { .string($0.text) } ?? .null),
                    ("lastDurablePoint", group.lastDurable.map { .integer($0.point) } ?? .null),
                    ("message", .string(group.message)),
                    ("smallest", .string(results[group.smallest].id.description)),
                    ("models", .array(groupModels(group).map { .string($0.rawValue) })),
                ])
            })),
        ])
    }

    /// The models under which some state of `group` can happen, in the report's order.
    func groupModels(_ group: ExploreGroups.Group) -> [CrashFilesystemModel] {
        let found = Set(group.members.flatMap(modelsOf))
        return models.filter(found.contains)
    }

    func modelsOf(_ index: Int) -> [CrashFilesystemModel] {
        results[index].models.isEmpty ? models : results[index].models
    }

    /// "fails on posix and xfs, survives on ext4": the models some failed
    /// state can happen under, and the others.
    var verdict: String {
        var failing: Set<CrashFilesystemModel> = []
        for (index, item) in results.enumerated() where !item.passed { failing.formUnion(modelsOf(index)) }
        let fails = models.filter(failing.contains), survives = models.filter { !failing.contains($0) }
        return [fails.isEmpty ? nil : "fails on " + CrashFilesystemModel.sentence(fails),
                survives.isEmpty ? nil : "survives on " + CrashFilesystemModel.sentence(survives)].compactMap { $0 }.joined(separator: ", ")
    }

    static func format(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }

    /// A failed state's loss in one line: its items, and how many more there are.
    static func lostText(_ failure: ExploreChecker.Failure) -> String {
        if failure.lostCount == 0 { return "nothing" }
        let more = failure.lostCount - failure.lost.count
        return failure.lost.joined(separator: "; ") + (more > 0 ? "; and \(more) more" : "")
    }

    public func text(shown: Int) -> String {
        var lines: [String] = []
        let sampling = sampled ? " (sampled evenly: \(chosenStates) of \(allStates))" : ""
        if let interruptedBy {
            lines.append("explore: interrupted by \(TerminationRequests.name(of: interruptedBy)) after \(states) of \(chosenStates) crash states "
                + "of \(operations) operations\(sampling): \(passed) passed, \(failed) failed, in \(Self.format(seconds)) s")
        } else {
            lines.append("explore: \(states) crash states of \(operations) operations\(sampling): \(passed) passed, \(failed) failed, in \(Self.format(seconds)) s")
        }
        lines.append(models.count == 1 ? "  model: \(models[0].rawValue) (\(verdict))" : "  models: \(verdict)")
        if let golden { lines.append("  golden: \(golden) (\(acknowledgments ?? 0) acknowledgment\(acknowledgments == 1 ? "" : "s") printed)") }
        lines += warnings.map { "  warning: " + $0 }
        lines.append("  the command \(commandEnded)" + (commandFailed ? " (a finding: the run itself did not end well)" : ""))
        if !commandStderr.isEmpty {
            lines.append("  its stderr ended with:")
            lines += commandStderr.split(separator: "\n", omittingEmptySubsequences: false).map { "    " + $0 }
        }
        let grouped = self.grouped
        let failedItems = results.enumerated().compactMap { index, item in item.failure.map { (index, item, $0) } }
        if !failedItems.isEmpty {
            lines.append("")
            lines.append("Groups (the same operation, last durable operation and message; corruption first, then lost acknowledgments):")
            for group in grouped.groups {
                let smallest = results[group.smallest]
                let kind = group.kind == .corruption ? "corruption" : "lost acknowledgment"
                lines.append("  group \(group.number), \(kind): \(group.members.count) state\(group.members.count == 1 ? "" : "s"), smallest \(smallest.id)"
                    + (models.count > 1 ? ", on \(CrashFilesystemModel.sentence(groupModels(group)))" : ""))
                lines.append("    operation:    \(group.operation)")
                lines.append("    last durable: \(group.lastDurable?.text ?? "none")")
                lines.append("    message:      \(group.message.isEmpty ? "(no stderr)" : group.message)")
                if let failure = smallest.failure { lines.append("    smallest lost: \(Self.lostText(failure))") }
            }
            lines.append("")
            lines.append(failedItems.count > shown ? "Failed states (the first \(shown) of \(failedItems.count); all with --json):" : "Failed states:")
            for (index, item, failure) in failedItems.prefix(shown) {
                lines.append("  state \(item.id) (group \(grouped.numbers[index] ?? 0))" + (models.count > 1 ? ", on \(CrashFilesystemModel.sentence(modelsOf(index)))" : ""))
                lines.append("    operation:    \(failure.operation)")
                lines.append("    last durable: \(failure.lastDurable?.text ?? "none")")
                lines.append("    lost:         \(Self.lostText(failure))")
                lines.append("    checker:      \(item.stderr.isEmpty ? "(no stderr)" : item.stderr)")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
