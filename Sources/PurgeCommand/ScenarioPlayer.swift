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

    init(scenario: Scenario, file: String, mountpoint: String, session: RunSession, access: AttributeAccess = .live) {
        self.scenario = scenario
        self.file = file
        self.mountpoint = mountpoint
        self.session = session
        self.access = access
        steps = scenario.steps.map { RunSummary.Step(line: $0.line, text: $0.description) }
    }

    var isFinished: Bool { next >= scenario.steps.count }

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
                steps[next].detail = try perform(step.action)
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

    /// Runs the action; returns the last line it printed.
    private func perform(_ action: ScenarioStep.Action) throws(CommandExit) -> String {
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
            return try purgefs(["crash", mountpoint])
        case .cloud(let verb, let path):
            return try purgefs(["cloud", verb, mountpoint] + (path.map { [$0] } ?? []))
        }
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
