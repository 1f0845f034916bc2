import PurgeCore
import PurgeSys

/// What `purgefs run` saw, printed when the command is over: as text, or
/// as JSON (`--json`, `--report FILE`). The JSON fields are listed in
/// `purgefs run --help` (`fieldHelp`), and each is filled here.
public struct RunSummary: Equatable {
    var container: String
    var mountpoint: String
    var scratch: Bool
    var command: [String]
    /// How the command ended; `nil` when it never started.
    var ended: WaitStatus?
    /// The signal `run` received and passed on to the command, if any.
    var interruptedBy: Int32?
    /// Why the run failed although the command may have been fine (a step
    /// that failed or timed out, an unmount that did not happen).
    public var failure: String?
    var durationMilliseconds: UInt64 = 0
    var peakUsed: UInt64?
    var purged: [Reason] = []
    var enospc: UInt64?
    /// `nil`: n/a (`faultsNote` says why).
    var faultsInjected: UInt64?
    var faultsNote = "purgefs fault list was not read"
    var cloneSavings: UInt64?
    var steps: [Step] = []
    /// The figures over time and the marks, for the report and `--html`;
    /// `nil` when nothing asked for them.
    var timeline: RunTimeline?

    /// Bytes and files purged for one reason (`monitor`, `write`, `manual`).
    struct Reason: Equatable {
        var reason: String
        var bytes: UInt64
        var files: UInt64
    }

    struct Step: Equatable {
        enum State: String {
            case done, failed
            case timedOut = "timed_out"
            case notReached = "not_reached"
        }
        var line: Int
        var text: String
        /// The action's first word (`squeeze`, `purge`, `crash`, ...).
        var action: String?
        var state: State = .notReached
        /// Milliseconds after the command started when it ran (or failed).
        var atMilliseconds: UInt64?
        /// The action's last line of output, or why it failed.
        var detail: String?
    }

    /// The exit status `run` passes on: the command's, `128 + N` when signal N killed it.
    public var commandStatus: Int32? {
        guard let ended else { return nil }
        if let code = ended.exitCode { return code }
        if let signal = ended.signal { return 128 + signal }
        return nil
    }

    var purgedBytes: UInt64 { purged.reduce(0) { $0 + $1.bytes } }
    var purgedFiles: UInt64 { purged.reduce(0) { $0 + $1.files } }

    /// Adds the purge log's entries (time at or after `since`, seconds since the epoch).
    mutating func count(_ entries: [PurgeLogEntry], since: Double) {
        for entry in entries where entry.time >= since {
            if let index = purged.firstIndex(where: { $0.reason == entry.reason }) {
                purged[index].bytes += entry.bytes
                purged[index].files += 1
            } else {
                purged.append(Reason(reason: entry.reason, bytes: entry.bytes, files: 1))
            }
        }
    }

    // MARK: Text

    public var text: String {
        var lines: [String] = []
        let how = ended.map { $0.description } ?? "did not start"
        lines.append("purgefs run: \(command.joined(separator: " ")) \(how)"
            + (interruptedBy.map { " (run was interrupted by \(TerminationRequests.name(of: $0)), passed on)" } ?? "")
            + " after \(Self.seconds(durationMilliseconds))")
        lines.append("  container         \(container)" + (scratch ? " (a scratch copy, removed)" : ""))
        lines.append("  peak used         " + (peakUsed.map(HumanText.size) ?? "n/a"))
        var purgedLine = "  purged            \(HumanText.size(purgedBytes)) in \(HumanText.count(purgedFiles, "file"))"
        if !purged.isEmpty {
            purgedLine += " (" + purged.map { "\($0.reason) \(HumanText.size($0.bytes)) in \(HumanText.count($0.files, "file"))" }
                .joined(separator: ", ") + ")"
        }
        lines.append(purgedLine)
        lines.append("  answered ENOSPC   " + (enospc.map { HumanText.count($0, "request") } ?? "n/a"))
        lines.append("  faults injected   " + (faultsInjected.map { String($0) } ?? "n/a (\(faultsNote))"))
        lines.append("  clone savings     " + (cloneSavings.map(HumanText.size) ?? "n/a"))
        if !steps.isEmpty {
            lines.append("  scenario:")
            let width = steps.map(\.text.count).max() ?? 0
            for step in steps {
                var line = "    line \(step.line)  " + HumanText.left(step.text, width) + "  " + step.state.rawValue.replacingUnderscores
                if let at = step.atMilliseconds { line += " at \(Self.seconds(at))" }
                if let detail = step.detail, !detail.isEmpty { line += ": " + detail }
                lines.append(line)
            }
        }
        if let failure { lines.append("  failed: \(failure)") }
        return lines.joined(separator: "\n")
    }

    public static func seconds(_ milliseconds: UInt64) -> String {
        "\(milliseconds / 1000).\(String(milliseconds % 1000 / 100)) s"
    }

    // MARK: JSON

    public var json: JSONValue {
        func optional(_ value: UInt64?) -> JSONValue { value.map { .integer($0) } ?? .null }
        var fields: [(String, JSONValue)] = [
            ("container", .string(container)),
            ("mountpoint", .string(mountpoint)),
            ("scratch", .bool(scratch)),
            ("command", .array(command.map { .string($0) })),
            ("exit_status", commandStatus.map { .integer(Int($0)) } ?? .null),
            ("exit_code", ended?.exitCode.map { .integer(Int($0)) } ?? .null),
            ("signal", ended?.signal.map { .string(Self.signalName($0)) } ?? .null),
            ("interrupted_by", interruptedBy.map { .string(TerminationRequests.name(of: $0)) } ?? .null),
            ("failure", failure.map { .string($0) } ?? .null),
            ("duration_ms", .integer(durationMilliseconds)),
            ("peak_used", optional(peakUsed)),
            ("purged_bytes", .integer(purgedBytes)),
            ("purged_files", .integer(purgedFiles)),
            ("purged_by_reason", .object(purged.map { ($0.reason, .object([("bytes", .integer($0.bytes)), ("files", .integer($0.files))])) })),
            ("enospc", optional(enospc)),
            ("faults_injected", optional(faultsInjected)),
            ("clone_savings", optional(cloneSavings)),
            ("steps", .array(steps.map { step in
                .object([
                    ("line", .integer(step.line)),
                    ("step", .string(step.text)),
                    ("action", step.action.map { .string($0) } ?? .null),
                    ("state", .string(step.state.rawValue)),
                    ("at_ms", optional(step.atMilliseconds)),
                    ("detail", step.detail.map { .string($0) } ?? .null),
                ])
            })),
        ]
        if let timeline { fields += timeline.jsonFields }
        return .object(fields)
    }

    /// `SIGKILL`, `SIGINT`, ...: the names a shell would print.
    static func signalName(_ signal: Int32) -> String {
        let names: [Int32: String] = [1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE",
                                      9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE", 14: "SIGALRM",
                                      15: "SIGTERM"]
        return names[signal] ?? "signal \(signal)"
    }

    /// The JSON fields, for `purgefs run --help` and docs/REFERENCE.md.
    public static let fieldHelp: [(String, String)] = [
        ("container, mountpoint", "the container given, and where it was mounted (the scratch copy with --scratch)"),
        ("scratch", "true with --scratch"),
        ("command", "the command and its arguments"),
        ("exit_status", "what run exits with: the command's exit code, or 128 + N when signal N killed it; null if it never started"),
        ("exit_code, signal", "how the command ended: its exit code, or the signal that killed it (SIGKILL...); the other is null"),
        ("interrupted_by", "SIGINT, SIGTERM or SIGHUP when run received it and passed it on to the command's process group"),
        ("failure", "why the run failed though the command ran (a scenario step that failed or timed out, an unmount), else null"),
        ("duration_ms", "from the command's start to its end"),
        ("peak_used", "the highest container_used of the mount (bytes), exact: the daemon keeps it (user.purgefs.peak_used)"),
        ("purged_bytes, purged_files", "what was purged during the run, from the purge log"),
        ("purged_by_reason", "the same by reason: {\"monitor\": {\"bytes\": N, \"files\": N}, \"write\": ..., \"manual\": ...}"),
        ("enospc", "requests the mount answered ENOSPC (writes and anything else that found no room: user.purgefs.enospc)"),
        ("faults_injected", "faults the mount's fault rules injected, from purgefs fault list; null when fault injection is not there"),
        ("clone_savings", "bytes not stored thanks to clones, at the end (user.purgefs.clone_savings)"),
        ("steps", "each scenario step: line, step (as read), action (its first word), state (done, failed, timed_out, not_reached), at_ms (after the command started), detail (the action's output, or why it failed)"),
    ]
}

private extension String {
    var replacingUnderscores: String { String(map { $0 == "_" ? " " : $0 }) }
}
