import PurgeCore
import PurgeSys

/// Plays a scenario against a mount while `purgefs run`'s command runs:
/// the steps in file order, each waiting for its trigger once the step
/// before it is done. The actions are this binary's own commands, run as
/// children (`space`, `purge`, `pin`, `unpin`, `fault add`, `crash`), so a
/// step does exactly what the command does; the conditions read the root's
/// attributes as `purgefs space` does.
///
/// `advance` is called by `run`'s loop about every 20 ms; it never waits
/// for a condition itself.
final class ScenarioPlayer {
    let scenario: Scenario
    let file: String
    let mountpoint: String
    private let session: RunSession
    private let access: AttributeAccess
    /// The next step to wait for.
    private(set) var next = 0
    /// When the next step began waiting (milliseconds after the command started).
    private var waitingSince: UInt64 = 0
    private(set) var steps: [RunSummary.Step]
    /// The command, which a crash kills and a restart starts again.
    var command: RunningCommand?
    /// `--restart-after-crash`: every crash step starts the command again.
    var restartAfterCrash = false
    /// The step that last started the command again, whose detail gets how it ended.
    private var restartedAt: Int?

    init(scenario: Scenario, file: String, mountpoint: String, session: RunSession, access: AttributeAccess = .live) {
        self.scenario = scenario
        self.file = file
        self.mountpoint = mountpoint
        self.session = session
        self.access = access
        steps = scenario.steps.map { RunSummary.Step(line: $0.line, text: $0.description, action: Self.name(of: $0.action)) }
    }

    var isFinished: Bool { next >= scenario.steps.count }

    /// Whether the command, killed by a crash, is to be started again by a step still to come.
    var awaitsRestart: Bool {
        guard let command, command.crashed else { return false }
        return !isFinished && scenario.restarts(after: next - 1)
    }

    /// How the command ended at last: said by the step that restarted it.
    func noteEnd(_ status: WaitStatus?) {
        guard let restartedAt, let status else { return }
        steps[restartedAt].detail = (steps[restartedAt].detail.map { $0 + "; " } ?? "") + "the restarted command \(status.description)"
    }

    /// What `purgefs crash` printed, in a few words: counts of the names and
    /// bytes it undid (each data line ends `(N bytes undone)` where the
    /// file's size was known).
    static func crashSummary(_ output: String) -> String {
        let lines = output.split(whereSeparator: \.isNewline)
        let names = lines.filter { $0.hasPrefix("name ") || $0.hasPrefix("names ") }.count
        let data = lines.filter { $0.hasPrefix("data ") }
        guard names + data.count > 0 else { return "nothing unsynced" }
        let bytes = data.reduce(UInt64(0)) { total, line in total + (undoneBytes(line) ?? 0) }
        var parts: [String] = []
        if names > 0 { parts.append(HumanText.count(UInt64(names), "name change")) }
        if !data.isEmpty {
            parts.append(HumanText.count(bytes, "unsynced byte") + " in " + HumanText.count(UInt64(data.count), "file"))
        }
        return "undid " + parts.joined(separator: " and ")
    }

    /// N of a data line's `(N bytes undone)`.
    private static func undoneBytes(_ line: Substring) -> UInt64? {
        for piece in line.split(separator: "(").dropFirst() {
            let digits = piece.prefix { $0.isASCII && $0.isNumber }
            if !digits.isEmpty, piece.dropFirst(digits.count).hasPrefix(" bytes undone)") { return UInt64(digits) }
        }
        return nil
    }

    /// Runs every step whose trigger holds at `now` (milliseconds after the
    /// command started), in order. Returns the line that fails the run: a
    /// step that failed, or a condition whose timeout ran out.
    func advance(now: UInt64) -> String? {
        while next < scenario.steps.count {
            let step = scenario.steps[next]
            let holds: Bool
            do throws(CommandExit) {
                holds = try self.holds(step.trigger, now: now)
            } catch {
                return fail(step, .failed, now: now, "cannot check the condition: \(Self.line(of: error))")
            }
            guard holds else {
                if let timeout = step.timeout, now - waitingSince >= timeout.value {
                    return fail(step, .timedOut, now: now, "\(step.trigger) did not hold within \(timeout)")
                }
                return nil
            }
            steps[next].atMilliseconds = now
            do throws(CommandExit) {
                steps[next].detail = try perform(step.action, index: next)
                steps[next].state = .done
            } catch {
                return fail(step, .failed, now: now, Self.line(of: error))
            }
            next += 1
            waitingSince = now
        }
        return nil
    }

    private func fail(_ step: ScenarioStep, _ state: RunSummary.Step.State, now: UInt64, _ reason: String) -> String {
        steps[next].state = state
        steps[next].atMilliseconds = now
        steps[next].detail = reason
        next = scenario.steps.count
        return "\(file):\(step.line): \(step): \(reason)"
    }

    private static func line(of error: CommandExit) -> String {
        switch error {
        case .help(let text): return text
        case .usage(let line), .failure(let line): return line
        case .passOn(let status): return "exited with status \(status)"
        }
    }

    // MARK: Triggers

    private func holds(_ trigger: ScenarioStep.Trigger, now: UInt64) throws(CommandExit) -> Bool {
        switch trigger {
        case .at(let time):
            return now >= time.value
        case .usedAbove(let threshold):
            let used = try access.number(.deviceUsed, of: mountpoint)
            let capacity = try access.number(.capacity, of: mountpoint)
            return used > threshold.bytes(ofCapacity: capacity)
        case .availableBelow(let bytes):
            return try access.number(.available, of: mountpoint) < bytes
        case .fileExists(let path):
            return (try? Paths.linkStatus(mountpoint + "/" + path)) != nil
        }
    }

    // MARK: Actions

    /// The action's first word, as the scenario file writes it (its description's).
    static func name(of action: ScenarioStep.Action) -> String {
        action.description.split(separator: " ").first.map(String.init) ?? ""
    }

    /// Runs the action; returns the last line it printed.
    private func perform(_ action: ScenarioStep.Action, index: Int) throws(CommandExit) -> String {
        switch action {
        case .squeeze(let bytes):
            return try purgefs(["space", mountpoint, "--available", String(bytes)])
        case .external(let bytes):
            return try purgefs(["space", mountpoint, "--external", String(bytes)])
        case .capacity(let bytes):
            return try purgefs(["space", mountpoint, "--capacity", String(bytes)])
        case .purge(let bytes):
            return try purgefs(["purge", mountpoint] + (bytes.map { ["--bytes", String($0)] } ?? ["--all"]))
        case .pin(let path):
            return try purgefs(["pin", mountpoint + "/" + path])
        case .unpin(let path):
            return try purgefs(["unpin", mountpoint + "/" + path])
        case .fault(let arguments):
            return try purgefs(["fault", "add", mountpoint] + arguments)
        case .crash:
            // A power loss stops the app too: it must not go on running on the crashed mount.
            command?.killForCrash()
            let (status, output) = try session.purgefs(["crash", mountpoint])
            guard status.exitCode == 0 else { throw .failure("purgefs crash failed: \(OwnMount.reason(output, status))") }
            var detail = "the command got SIGKILL; " + Self.crashSummary(output)
            if restartAfterCrash, command != nil {
                try restart(index: index)
                detail += "; started again"
            }
            return detail
        case .restart:
            guard command != nil else { throw .failure("restart: there is no command to start again") }
            try restart(index: index)
            return "started again"
        case .cloud(let verb, let path):
            return try purgefs(["cloud", verb, mountpoint] + (path.map { [$0] } ?? []))
        }
    }

    private func restart(index: Int) throws(CommandExit) {
        do throws(Errno) {
            try command?.restart()
        } catch {
            throw .failure("cannot start the command again: \(error)")
        }
        restartedAt = index
    }

    /// Runs `purgefs ARGUMENTS`; a failure is its reason.
    private func purgefs(_ arguments: [String]) throws(CommandExit) -> String {
        let (status, output) = try session.purgefs(arguments)
        guard status.exitCode == 0 else {
            throw .failure("purgefs \(arguments[0]) failed: \(OwnMount.reason(output, status))")
        }
        let lines = output.split(whereSeparator: \.isNewline)
        return lines.first.map(String.init) ?? ""
    }
}
