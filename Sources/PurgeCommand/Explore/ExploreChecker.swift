import Glibc
import PurgeCore
import PurgeSys

/// Checks crash states: each is built in a slot directory of its own
/// (`CrashStateBuilder`, which keeps what the slot's previous state shares
/// with it), the stdout the command had printed by then is written beside
/// it, and the checker runs through `sh -c` with `PURGEFS_CRASH_STATE`,
/// `PURGEFS_CRASH_POINT` and `PURGEFS_CRASH_OUTPUT`; `parallel` slots at once.
/// On a terminal a progress line on stderr says states done, failed, time left.
struct ExploreChecker {
    let work: String
    let base: String
    let data: FileDescriptor
    let check: String
    let parallel: Int
    let output: [UInt8]
    let exploration: CrashExploration
    let keep: String?

    struct Result {
        var state: CrashExploration.State
        var passed: Bool
        var stderr: String
    }

    private struct Running {
        var pid: ProcessID
        var slot: Int
        var index: Int
    }

    func check(_ states: [CrashExploration.State]) throws(CommandExit) -> [Result] {
        var builders: [CrashStateBuilder] = []
        do throws(Errno) {
            for slot in 0..<parallel {
                builders.append(try CrashStateBuilder(directory: work + "/state\(slot)", base: base, data: data))
            }
        } catch {
            throw .failure("explore: cannot make the state directories in \(work): \(error)")
        }
        var results: [Result?] = Array(repeating: nil, count: states.count)
        var running: [Running] = []
        var next = 0
        var done = 0
        var failed = 0
        let started = WallClock.seconds()
        let terminal = FileDescriptor.standardError.isTerminal
        var lastProgress = 0.0
        let environment = CurrentProcess.environment.filter { !$0.hasPrefix("PURGEFS_CRASH_") && !$0.hasPrefix("PURGEFS_MOUNT=") }
        defer { if terminal { try? FileDescriptor.standardError.writeAll("\r\u{1B}[K") } }
        while done < states.count {
            if let signal = TerminationRequests.pending {
                for job in running { try? ProcessGroup.signal(job.pid, SIGKILL); _ = try? ChildProcess.wait(job.pid) }
                throw .failure("explore: interrupted by \(TerminationRequests.name(of: signal)) after \(done) of \(states.count) states")
            }
            // Start states on free slots.
            while next < states.count, running.count < parallel {
                let slot = (0..<parallel).first { slot in !running.contains { $0.slot == slot } }!
                let state = states[next]
                let stateDirectory = builders[slot].directory
                let outputFile = work + "/output\(slot)"
                let stderrFile = work + "/stderr\(slot)"
                do throws(Errno) {
                    try builders[slot].build(state)
                    try writeOutput(upTo: state.id.point, to: outputFile)
                    let errors = try FileDescriptor.open(path: stderrFile, flags: O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode: 0o600)
                    defer { errors.closeQuietly() }
                    let pid = try ChildProcess.spawn(
                        "/bin/sh", arguments: ["sh", "-c", check],
                        environment: environment + ["PURGEFS_CRASH_STATE=" + stateDirectory, "PURGEFS_CRASH_POINT=\(state.id.point)",
                                                    "PURGEFS_CRASH_OUTPUT=" + outputFile],
                        fileActions: [.open("/dev/null", as: .standardInput, flags: OpenFlags.readOnly),
                                      .open("/dev/null", as: .standardOutput, flags: OpenFlags.writeOnly),
                                      .duplicate(errors, to: .standardError)],
                        ownProcessGroup: true)
                    running.append(Running(pid: pid, slot: slot, index: next))
                } catch {
                    for job in running { try? ProcessGroup.signal(job.pid, SIGKILL); _ = try? ChildProcess.wait(job.pid) }
                    throw .failure("explore: cannot build or check state \(state.id): \(error)")
                }
                next += 1
            }
            // Reap what ended.
            var ended = false
            for (position, job) in running.enumerated().reversed() {
                guard let status = try? ChildProcess.poll(job.pid) else { continue }
                try? ProcessGroup.signal(job.pid, SIGKILL)  // whatever it left running in its group
                running.remove(at: position)
                ended = true
                let stderr = Self.lastLine(of: work + "/stderr\(job.slot)")
                if status.exitCode == 127 {
                    for other in running { try? ProcessGroup.signal(other.pid, SIGKILL); _ = try? ChildProcess.wait(other.pid) }
                    throw .failure("explore: the checker could not run (sh -c exited 127): \(stderr)")
                }
                let passed = status.exitCode == 0
                results[job.index] = Result(state: states[job.index], passed: passed, stderr: stderr)
                done += 1
                if !passed {
                    failed += 1
                    if let keep { try keepState(states[job.index], in: keep) }
                }
            }
            if terminal, WallClock.seconds() - lastProgress > 0.25 || done == states.count {
                lastProgress = WallClock.seconds()
                let elapsed = lastProgress - started
                let left = done > 0 ? elapsed / Double(done) * Double(states.count - done) : 0
                try? FileDescriptor.standardError.writeAll(
                    "\r\u{1B}[Kexplore: \(done)/\(states.count) states, \(failed) failed, \(done > 0 ? "\(Int(left.rounded())) s left" : "starting")")
            }
            if !ended { CurrentProcess.sleep(milliseconds: 2) }
        }
        return results.compactMap { $0 }
    }

    /// The command's stdout before operation `point` + 1 (all of it after the last operation).
    private func writeOutput(upTo point: Int, to path: String) throws(Errno) {
        let length = point >= exploration.operationCount ? output.count : Int(min(UInt64(output.count), exploration.outputLength(at: point)))
        let file = try FileDescriptor.open(path: path, flags: O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode: 0o644)
        defer { file.closeQuietly() }
        let prefix = Array(output[..<length])
        var failure: Errno?
        prefix.withUnsafeBytes { bytes in
            do throws(Errno) { try file.writeAll(bytes) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    /// Makes the failed state again, as it was before its checker ran, in KEEP/POINT-VARIANT.
    private func keepState(_ state: CrashExploration.State, in keep: String) throws(CommandExit) {
        do throws(Errno) {
            if !Paths.exists(keep) { try Paths.makeDirectory(keep, mode: 0o755) }
            let directory = keep + "/\(state.id.point)-\(state.id.variant)"
            try OwnMount.removeWithPatience(directory, missingIsFine: true)
            try CrashStateBuilder(directory: directory, base: base, data: data).build(state)
        } catch {
            throw .failure("explore: cannot keep state \(state.id) in \(keep): \(error)")
        }
    }

    /// The last non-empty line of a file (the checker's stderr), at most 500 characters.
    static func lastLine(of path: String) -> String {
        guard let bytes = try? FileDescriptor.readFile(path, limit: 1 << 20) else { return "" }
        let text = String(decoding: bytes, as: UTF8.self)
        let line = text.split(whereSeparator: \.isNewline).last(where: { !$0.allSatisfy(\.isWhitespace) }).map(String.init) ?? ""
        return String(line.prefix(500))
    }
}
