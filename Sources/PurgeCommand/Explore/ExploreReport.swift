import PurgeCore

/// What `purgefs explore` found, as text and as JSON. The JSON's shape is
/// fixed (pages draw it): `states`, `passed`, `failed`, `sampled`,
/// `operations`, `results` (`point`, `variant`, `passed`, in exploration
/// order) and `failures` (`point`, `variant`, `operation`, `lastDurable`,
/// `lost`, `stderr`, `group`); other fields may be added.
struct ExploreReport {
    var container: String
    var command: [String]
    var check: String
    var operations: Int
    /// States there were before sampling.
    var allStates: Int
    var sampled: Bool
    var results: [ExploreChecker.Result]
    var seconds: Double
    var commandEnded: String
    var fingerprint: String
    var torn: Bool
    /// The models explored, and each result's (aligned with `results`):
    /// those under which its state can happen.
    var models: [CrashFilesystemModel]
    var stateModels: [[CrashFilesystemModel]]
    var recording: String?

    var states: Int { results.count }
    var failed: Int { results.filter { !$0.passed }.count }
    var passed: Int { states - failed }

    /// The group of each failed state (by index in `results`): states with
    /// the same last durable operation and the same kind of variant, which
    /// differ only in what they lost after it; numbered from 1 in order.
    var groups: [Int: Int] {
        var numbers: [String: Int] = [:]
        var result: [Int: Int] = [:]
        for (index, item) in results.enumerated() where !item.passed {
            let kind: String
            switch item.state.id.variant {
            case .namesKept: kind = "kept"
            case .namesLost: kind = "lost"
            case .torn: kind = "torn"
            case .reordered: kind = "reordered"
            }
            let key = "\(item.state.lastDurable?.point ?? 0)/\(kind)"
            if numbers[key] == nil { numbers[key] = numbers.count + 1 }
            result[index] = numbers[key]
        }
        return result
    }

    var json: JSONValue {
        let groups = self.groups
        let failures: [JSONValue] = results.enumerated().compactMap { index, item in
            guard !item.passed else { return nil }
            return .object([
                ("point", .integer(item.state.id.point)),
                ("variant", .string(item.state.id.variant.description)),
                ("state", .string(item.state.id.description)),
                ("operation", .string(item.state.operation)),
                ("lastDurable", item.state.lastDurable.map { .string($0.text) } ?? .null),
                ("lastDurablePoint", item.state.lastDurable.map { .integer($0.point) } ?? .null),
                ("lost", .array(item.state.lost.map(JSONValue.string))),
                ("stderr", .string(item.stderr)),
                ("group", .integer(groups[index] ?? 0)),
                ("models", .array(modelsOf(index).map { .string($0.rawValue) })),
            ])
        }
        return .object([
            ("container", .string(container)),
            ("command", .array(command.map(JSONValue.string))),
            ("check", .string(check)),
            ("commandEnded", .string(commandEnded)),
            ("operations", .integer(operations)),
            ("states", .integer(states)),
            ("passed", .integer(passed)),
            ("failed", .integer(failed)),
            ("sampled", .bool(sampled)),
            ("statesInAll", .integer(allStates)),
            ("torn", .bool(torn)),
            models.count == 1 ? ("model", .string(models[0].rawValue)) : ("models", .array(models.map { .string($0.rawValue) })),
            ("seconds", .number(Self.format(seconds))),
            ("fingerprint", .string(fingerprint)),
            ("recording", recording.map(JSONValue.string) ?? .null),
            ("results", .array(results.map { item in
                .object([("point", .integer(item.state.id.point)), ("variant", .string(item.state.id.variant.description)),
                         ("passed", .bool(item.passed))])
            })),
            ("failures", .array(failures)),
        ])
    }

    func modelsOf(_ index: Int) -> [CrashFilesystemModel] {
        index < stateModels.count ? stateModels[index] : models
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

    func text(shown: Int) -> String {
        var lines: [String] = []
        let sampling = sampled ? " (sampled evenly: \(states) of \(allStates))" : ""
        lines.append("explore: \(states) crash states of \(operations) operations\(sampling): \(passed) passed, \(failed) failed, in \(Self.format(seconds)) s")
        lines.append(models.count == 1 ? "  model: \(models[0].rawValue) (\(verdict))" : "  models: \(verdict)")
        lines.append("  the command \(commandEnded)")
        let groups = self.groups
        let failedItems = results.enumerated().filter { !$0.element.passed }
        if !failedItems.isEmpty {
            lines.append("")
            lines.append(failedItems.count > shown ? "Failed states (the first \(shown) of \(failedItems.count); all with --json):" : "Failed states:")
            for (index, item) in failedItems.prefix(shown) {
                lines.append("  state \(item.state.id) (group \(groups[index] ?? 0))" + (models.count > 1 ? ", on \(CrashFilesystemModel.sentence(modelsOf(index)))" : ""))
                lines.append("    operation:    \(item.state.operation)")
                lines.append("    last durable: \(item.state.lastDurable?.text ?? "none")")
                lines.append("    lost:         \(item.state.lost.isEmpty ? "nothing" : item.state.lost.joined(separator: "; "))")
                lines.append("    checker:      \(item.stderr.isEmpty ? "(no stderr)" : item.stderr)")
            }
            lines.append("")
            lines.append("Groups (failed states that differ only in what they lost after the same durable operation):")
            var members: [Int: [String]] = [:]
            var after: [Int: String] = [:]
            for (index, item) in failedItems {
                let group = groups[index] ?? 0
                members[group, default: []].append(item.state.id.description)
                after[group] = item.state.lastDurable?.text ?? "none (nothing was durable yet)"
            }
            for group in members.keys.sorted() {
                let names = members[group]!
                let listed = names.prefix(6).joined(separator: ", ") + (names.count > 6 ? ", ..." : "")
                lines.append("  group \(group): \(names.count) state\(names.count == 1 ? "" : "s") (\(listed)), after: \(after[group]!)")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

