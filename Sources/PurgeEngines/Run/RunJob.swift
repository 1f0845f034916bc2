import Glibc
import PurgeCore
import PurgeSys

/// `purgefs run`'s work once its arguments are read: mounts the container
/// (in place, or a scratch copy), runs the command on it with the scenario
/// played meanwhile, passes on termination requests, reads the figures and
/// unmounts however the command ended. The caller installs
/// `TerminationRequests` first and prints or writes the summary.
public struct RunJob {
    /// How long the command's group has after a passed-on signal (or the
    /// SIGTERM of a failed step) before it gets SIGKILL.
    public static let graceMilliseconds: UInt64 = 10_000
    /// How often the loop looks at the command and the scenario.
    public static let tickMilliseconds = 20

    public var container: String
    public var options: [String]
    public var scenario: Scenario?
    /// The scenario's file, for its messages.
    public var scenarioFile: String
    public var scratch: Bool
    public var restartAfterCrash: Bool
    /// Whether to sample the figures over time (the timeline of the report and the page).
    public var sampled: Bool
    public var command: [String]

    public init(container: String, options: [String], scenario: Scenario?, scenarioFile: String, scratch: Bool,
                restartAfterCrash: Bool, sampled: Bool, command: [String]) {
        self.container = container
        self.options = options
        self.scenario = scenario
        self.scenarioFile = scenarioFile
        self.scratch = scratch
        self.restartAfterCrash = restartAfterCrash
        self.sampled = sampled
        self.command = command
    }

    /// Runs it all and returns what happened; throws only when nothing could be run (the copy, the mount).
    public func run() throws(CommandExit) -> RunSummary {
        let workingDirectory = try? Paths.workingDirectory()
        let session = try RunSession.prepare(container: container, scratch: scratch)
        var summary = RunSummary(container: container, mountpoint: session.mountpoint, scratch: scratch, command: command)
        let since = WallClock.seconds()
        do throws(CommandExit) {
            // A scenario that crashes needs the mount to record what was not synced.
            try session.mount(options: options + (scenario?.crashes == true ? [MountOptionCatalog.name(of: \MountOptions.crashable)] : []))
            if let signal = TerminationRequests.pending {
                throw .failure("run: interrupted by \(TerminationRequests.name(of: signal)) before the command started")
            }
        } catch {
            if let problem = session.tearDown() { throw .failure("\(error.line); and \(problem.dropFirst("run: ".count))") }
            throw error
        }
        let player = scenario.map { ScenarioPlayer(scenario: $0, file: scenarioFile, mountpoint: session.mountpoint, session: session) }
        // The figures over time, for the report and the page.
        let sampler = sampled ? RunSampler(mountpoint: session.mountpoint) : nil
        sampler?.start()
        player?.restartAfterCrash = restartAfterCrash

        let outcome = supervise(in: session, from: workingDirectory, player: player, sampler: sampler)
        summary.ended = outcome.ended
        summary.interruptedBy = outcome.interruptedBy
        summary.failure = outcome.failure
        summary.durationMilliseconds = outcome.milliseconds
        player?.noteEnd(outcome.ended)
        summary.steps = player?.steps ?? []
        Self.collect(into: &summary, session: session, since: since)
        if let sampler {
            sampler.finish(now: outcome.milliseconds, since: since, session: session)
            summary.timeline = sampler.timeline
        }
        if let problem = session.tearDown() {
            summary.failure = summary.failure.map { $0 + "; and " + problem } ?? problem
        }
        return summary
    }

    // MARK: The command

    struct Outcome {
        var ended: WaitStatus?
        var interruptedBy: Int32?
        var failure: String?
        var milliseconds: UInt64 = 0
    }

    /// Starts the command and waits for it to end, playing the scenario and
    /// passing on termination requests meanwhile.
    private func supervise(in session: RunSession, from workingDirectory: String?, player: ScenarioPlayer?,
                           sampler: RunSampler?) -> Outcome {
        var outcome = Outcome()
        let running = RunningCommand { () throws(Errno) -> ProcessID in try start(in: session, from: workingDirectory) }
        do throws(Errno) {
            try running.start()
        } catch {
            outcome.failure = "run: cannot start \(command[0]): \(error)"
            return outcome
        }
        player?.command = running
        guard var pid = running.pid else { return outcome }
        // A command that reads the terminal must own it, or it stops (SIGTTIN) and never ends.
        let terminal = FileDescriptor.standardInput
        let tookTerminal = terminal.isTerminal && ProcessGroup.foreground(of: terminal) == ProcessGroup.current
            && (try? ProcessGroup.setForeground(pid, of: terminal)) != nil
        if tookTerminal { try? ProcessGroup.signal(pid, SIGCONT) }
        defer { if tookTerminal { try? ProcessGroup.setForeground(ProcessGroup.current, of: terminal) } }

        let clock = ContinuousClock()
        let started = clock.now
        func now() -> UInt64 {
            let elapsed = started.duration(to: clock.now).components
            return UInt64(max(0, elapsed.seconds)) * 1000 + UInt64(max(0, elapsed.attoseconds)) / 1_000_000_000_000_000
        }
        var signalledAt: UInt64?
        var killed = false
        while true {
            if let current = running.pid {
                pid = current
                if let status = try? ChildProcess.poll(current) {
                    outcome.ended = status
                    running.pid = nil
                    if !(player?.awaitsRestart ?? false) { break }
                }
            } else if let status = running.crashedStatus, !(player?.awaitsRestart ?? false) {
                // A crash killed it, and nothing will start it again.
                outcome.ended = outcome.ended ?? status
                break
            }
            let time = now()
            if outcome.interruptedBy == nil, let signal = TerminationRequests.pending {
                outcome.interruptedBy = signal
                try? ProcessGroup.signal(pid, signal)
                signalledAt = signalledAt ?? time
            }
            if outcome.failure == nil, let player, !player.isFinished, let failure = player.advance(now: time) {
                outcome.failure = failure
                try? ProcessGroup.signal(pid, SIGTERM)
                signalledAt = signalledAt ?? time
            }
            sampler?.tick(now: time)
            if let signalledAt, !killed, time - signalledAt >= Self.graceMilliseconds {
                try? ProcessGroup.signal(pid, SIGKILL)
                killed = true
            }
            CurrentProcess.sleep(milliseconds: Self.tickMilliseconds)
        }
        outcome.milliseconds = now()
        // What the command started and left behind in its group goes too, before the unmount.
        try? ProcessGroup.signal(pid, SIGKILL)
        return outcome
    }

    /// Spawns the command in its own process group with PURGEFS_MOUNT set;
    /// from run's working directory looked up again, so a directory inside
    /// the container is seen through the mount.
    private func start(in session: RunSession, from workingDirectory: String?) throws(Errno) -> ProcessID {
        let environment = CurrentProcess.environment.filter {
            !$0.hasPrefix("PURGEFS_MOUNT=") && !$0.hasPrefix(ReadySignal.environmentName + "=")
        } + ["PURGEFS_MOUNT=" + session.mountpoint]
        if let workingDirectory { try? CurrentProcess.changeDirectory(workingDirectory) }
        // run itself must hold nothing inside the mount, or it could not unmount.
        defer { try? CurrentProcess.changeDirectory("/") }
        return try ChildProcess.spawn(command[0], arguments: command, environment: environment,
                                      searchPath: !command[0].contains("/"), ownProcessGroup: true)
    }

    // MARK: The summary

    /// Reads the figures from the mount before it goes: the root's
    /// attributes, the purge log since `since`, the fault rules.
    private static func collect(into summary: inout RunSummary, session: RunSession, since: Double) {
        let access = AttributeAccess.live
        let root = session.mountpoint
        summary.peakUsed = try? access.number(.peakUsed, of: root)
        summary.enospc = try? access.number(.enospc, of: root)
        summary.cloneSavings = try? access.number(.cloneSavings, of: root)
        if let (status, output) = try? session.purgefs(["log", root, "--json"]), status.exitCode == 0 {
            summary.count(output.split(whereSeparator: \.isNewline).compactMap { PurgeLogEntry(line: $0) }, since: since)
        }
        if let (status, output) = try? session.purgefs(["fault", "list", root, "--json"]) {
            if status.exitCode == 0, let injected = faultsInjected(output) {
                summary.faultsInjected = injected
            } else if status.exitCode == 0 {
                summary.faultsNote = "purgefs fault list gave no count of injected faults"
            } else {
                summary.faultsNote = "purgefs fault list failed: \(OwnMount.reason(output, status))"
            }
        }
    }

    /// The sum of the `fired` counts in `purgefs fault list --json`: an
    /// array of rules, or an object with a `rules` array.
    static func faultsInjected(_ output: String) -> UInt64? {
        guard let value = JSONValue(parsing: output) else { return nil }
        let rules: [JSONValue]
        switch value {
        case .array(let items): rules = items
        default:
            guard case .array(let items)? = value["rules"] else { return nil }
            rules = items
        }
        let counts = rules.compactMap { $0["fired"]?.integerValue }
        return counts.count == rules.count ? counts.reduce(0, +) : nil
    }
}
