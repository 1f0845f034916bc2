import Glibc
import PurgeCore
import PurgeFS
import PurgeSys

/// `purgefs explore`'s work once its arguments are read: copies the
/// container, runs the command once on a recorded mount of the copy
/// (`ExploreWorkspace`, `ExploreRun`), reads the operation log
/// (`OperationLog`), checks the crash states (`ExploreChecker`, with
/// `ExploreGolden`), writes the report files asked for (`--report` with the
/// recording beside it, `--html`, `--junit`, `--keep`'s recording) and
/// returns the report. The caller installs `TerminationRequests` first
/// (without it, only the timeouts stop anything early) and prints the
/// report. A process other than purgefs (a test) drives it in-process by
/// naming the `purgefs` binary that mounts the copy.
public struct ExploreSession {
    public var container: String
    /// Mount options for the run (`-o`).
    public var options: [String]
    public var command: [String]
    /// `--check`: empty when only `--golden` judges.
    public var check: String
    /// `--golden CMD`.
    public var golden: String?
    public var torn: Bool
    public var models: [CrashFilesystemModel]
    public var maxStates: Int?
    public var timeout: DurationSeconds?
    public var checkTimeout: DurationSeconds?
    /// Absolute paths: `--keep DIR`, `--report FILE`, `--html FILE`, `--junit FILE`.
    public var keep: String?
    public var reportPath: String?
    public var htmlPath: String?
    public var junitPath: String?
    /// The binary that mounts the copy: this one (`/proc/self/exe`) in the
    /// command; a test process gives the purgefs it built.
    public var purgefs = "/proc/self/exe"

    public init(container: String, options: [String], command: [String], check: String, golden: String? = nil, torn: Bool = false,
                models: [CrashFilesystemModel] = [.ext4], maxStates: Int? = nil, timeout: DurationSeconds? = nil,
                checkTimeout: DurationSeconds? = nil, keep: String? = nil, reportPath: String? = nil, htmlPath: String? = nil,
                junitPath: String? = nil) {
        self.container = container
        self.options = options
        self.command = command
        self.check = check
        self.golden = golden
        self.torn = torn
        self.models = models
        self.maxStates = maxStates
        self.timeout = timeout
        self.checkTimeout = checkTimeout
        self.keep = keep
        self.reportPath = reportPath
        self.htmlPath = htmlPath
        self.junitPath = junitPath
    }

    /// Explores and returns the report; throws when nothing could be
    /// explored (the copy, the mount, the log) or a report file could not
    /// be written.
    public func run() throws(CommandExit) -> ExploreReport {
        let started = WallClock.seconds()
        let work = try OwnMount.scratchDirectory("purgefs-explore")
        let workspace = ExploreWorkspace(work: work, purgefs: purgefs)
        defer {
            _ = workspace.unmount()
            workspace.remove()
        }
        try workspace.copy(container)
        let initial: [CrashExploration.InitialEntry]
        let fingerprint: String
        do throws(Errno) {
            initial = try OperationLog.tree(of: workspace.runCopy)
            fingerprint = ExploreReplay.fingerprint(try OperationLog.tree(of: workspace.base), root: workspace.base)
        } catch {
            throw .failure("explore: cannot read the copy of \(container): \(error)")
        }
        let run = try ExploreRun(workspace: workspace, command: command, options: options, timeout: timeout?.seconds).run()
        if let problem = workspace.unmount() { throw .failure(problem) }
        let records: [RecordedOperation]
        let data: FileDescriptor
        do throws(Errno) {
            guard let parsed = try OperationLog.records(in: workspace.record) else { throw Errno(EIO) }
            records = parsed
            data = try OperationLog.openData(in: workspace.record)
        } catch {
            throw .failure("explore: cannot read the operation log: \(error)")
        }
        defer { data.closeQuietly() }
        let explorations = models.map { CrashExploration(initial: initial, records: records, model: $0) }
        let exploration = explorations[0]
        if exploration.operationCount == 0, run.interruptedBy == nil, !run.timedOut, run.status?.exitCode != 0 {
            let ended = run.status.map { "it \($0.description)" } ?? "it could not be started"
            throw .failure("explore: \(command[0]) changed nothing before it ended (\(ended)): no crash state to explore")
        }
        var output = OperationLog.output(records, data: data)
        output += run.trailingOutput

        let sized = CrashExploration.sizedUnionIDs(explorations, torn: torn)
        let all = sized.map(\.id)
        let chosen = maxStates.map { CrashExploration.sample(all, limit: $0) } ?? all
        var warnings: [String] = []
        let acknowledgments = CrashAcknowledgments(output: output, exploration: exploration)
        if golden != nil, acknowledgments.looksBlockBuffered {
            warnings.append(ExploreGolden.blockBufferedWarning)
            try? FileDescriptor.standardError.writeAll("explore: warning: \(ExploreGolden.blockBufferedWarning)\n")
        }
        var checked = ExploreChecker.Outcome(results: [], interruptedBy: run.interruptedBy)
        if run.interruptedBy == nil {
            var checker = ExploreChecker(work: work, base: workspace.base, data: data, check: check.isEmpty ? nil : check, parallel: Self.parallelChecks,
                                         output: output, explorations: explorations, keep: keep, timeout: checkTimeout?.seconds)
            checker.golden = golden.map { ExploreGolden(command: $0, acknowledgments: acknowledgments) }
            let entries = Dictionary(sized.map { ($0.id, $0.entries) }, uniquingKeysWith: { first, _ in first })
            checked = try checker.check(chosen, sizes: chosen.map { entries[$0] ?? 1 })
        }

        var report = ExploreReport(container: container, command: command, check: check, operations: exploration.operationCount,
                                   allStates: all.count, chosenStates: chosen.count, sampled: chosen.count < all.count,
                                   results: checked.results, seconds: WallClock.seconds() - started,
                                   commandEnded: Self.ended(run, timeout: timeout), commandStatus: run.status.map(Self.status),
                                   commandTimedOut: run.timedOut, commandStderr: run.stderrTail,
                                   fingerprint: fingerprint, torn: torn, models: models, interruptedBy: checked.interruptedBy)
        report.golden = golden
        report.acknowledgments = golden == nil ? nil : acknowledgments.lines.count
        report.warnings = warnings
        if let reportPath {
            let saved = reportPath + ".recording"
            report.recording = saved
            try ExploreReplay.save(workspace: workspace, initial: initial, output: run.trailingOutput, to: saved)
            do throws(Errno) {
                try Self.write(report.json.pretty + "\n", to: reportPath)
            } catch {
                throw .failure("explore: cannot write the report \(reportPath): \(error)")
            }
        }
        if let htmlPath {
            do throws(Errno) {
                try ExplorePage(report.json).page.write(to: htmlPath)
            } catch {
                throw .failure("explore: cannot write the page \(htmlPath): \(error)")
            }
        }
        if let junitPath {
            do throws(Errno) {
                try Self.write(ExploreJUnit.xml(report), to: junitPath)
            } catch {
                throw .failure("explore: cannot write the JUnit report \(junitPath): \(error)")
            }
        }
        if let keep, report.failed > 0 {
            try ExploreReplay.save(workspace: workspace, initial: initial, output: run.trailingOutput, to: keep + "/recording")
        }
        return report
    }

    /// How the recorded run ended, as the end of a sentence about the command.
    static func ended(_ run: ExploreRun.Outcome, timeout: DurationSeconds?) -> String {
        let status = run.status?.description ?? "was not started"
        if run.timedOut, let timeout { return "ran out of time (--timeout \(timeout)) and was stopped: it \(status)" }
        if let signal = run.interruptedBy { return "was stopped by explore's \(TerminationRequests.name(of: signal)): it \(status)" }
        return status
    }

    /// An exit status as a shell gives it: 128 + N for signal N.
    static func status(_ status: WaitStatus) -> Int32 {
        status.exitCode ?? (128 + (status.signal ?? 0))
    }

    /// States checked at once: two where there are two CPUs (or more).
    static var parallelChecks: Int { min(2, CurrentProcess.processorsOnline) }

    static func write(_ text: String, to path: String) throws(Errno) {
        let file = try FileDescriptor.open(path: path, flags: O_WRONLY | O_CREAT | O_TRUNC, mode: 0o644)
        defer { file.closeQuietly() }
        try file.writeAll(text)
    }
}
