import Glibc
import PurgeCore
import PurgeSys

/// `--golden CMD`: a checker for free. CMD prints a view of a state (run
/// in the state's directory, as `ExploreJob` runs it); its view (stdout
/// and exit status) is taken of the container as the command saw it at
/// each point where it printed a line, at the start and at the end
/// (`CrashAcknowledgments.referencePoints`), and a crash state passes when
/// its view equals the one at its last acknowledged point or a later one.
struct ExploreGolden {
    let command: String
    let acknowledgments: CrashAcknowledgments
    /// The view at each reference point.
    private(set) var views: [Int: CrashView] = [:]

    init(command: String, acknowledgments: CrashAcknowledgments) {
        self.command = command
        self.acknowledgments = acknowledgments
    }

    /// What the report says when the output looks block-buffered.
    static let blockBufferedWarning = "every line the command printed came after its last operation, as block-buffered output "
        + "does (a pipe's default): --golden places each acknowledgment where its line arrived, so run the command under "
        + "stdbuf -oL or make it flush stdout after each line"

    /// Takes the view at every reference point: each live state built with
    /// `builder`, CMD run on it with `timeout`. Nil when a termination
    /// request came first.
    mutating func takeViews(of exploration: CrashExploration, output: [UInt8], builder: CrashStateBuilder, work: String,
                            timeout: UInt64?) throws(CommandExit) -> Int32? {
        let environment = ExploreJob.environment
        let viewFile = work + "/golden.view", stderrFile = work + "/golden.stderr", outputFile = work + "/golden.output"
        var interrupted: Int32?
        try exploration.forEachLiveState(acknowledgments.referencePoints) { (state) throws(CommandExit) in
            guard interrupted == nil else { return }
            let point = state.id.point
            let name = acknowledgments.name(of: point)
            let pid: ProcessID
            do throws(Errno) {
                try builder.build(state)
                try ExploreJob.writeOutput(output, length: acknowledgments.outputLength(at: point), to: outputFile)
                pid = try ExploreJob.start(command, state: builder.directory, point: point, output: outputFile, view: viewFile,
                                           stderr: stderrFile, environment: environment)
            } catch {
                throw .failure("explore: cannot take the --golden view at \(name) (point \(point)): \(error)")
            }
            switch ExploreJob.wait(pid, timeout: timeout) {
            case .interrupted(let signal): interrupted = signal
            case .timedOut:
                throw .failure("explore: the --golden command ran out of time (--check-timeout) on the state at \(name) (point \(point)), "
                    + "which the command itself made: no view to compare crash states with")
            case .exited(let status):
                if status.exitCode == 127 {
                    throw .failure("explore: the --golden command could not run (sh -c exited 127): \(ExploreChecker.lastLine(of: stderrFile))")
                }
                views[point] = ExploreJob.view(at: viewFile, status: status)
            }
        }
        return interrupted
    }

    /// The verdict on a crash state's `view`, its output having run to `outputLength`.
    func verdict(_ view: CrashView, outputLength: UInt64) -> CrashAcknowledgments.Verdict {
        acknowledgments.verdict(matching: Set(views.compactMap { $0.value == view ? $0.key : nil }), outputLength: outputLength)
    }
}
