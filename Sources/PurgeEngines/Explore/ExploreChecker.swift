import Glibc
import PurgeCore
import PurgeSys

/// Checks crash states: each is built in a slot directory of its own
/// (`CrashStateBuilder`, which keeps what the slot's previous state shares
/// with it), the stdout the command had printed by then is written beside
/// it, and the checker runs through `sh -c` with `PURGEFS_CRASH_STATE`,
/// `PURGEFS_CRASH_POINT` and `PURGEFS_CRASH_OUTPUT`; `parallel` slots at once.
/// States are made as slots come free, so only `parallel` of them are held
/// at a time; a result keeps what the report says of its state (for a
/// failed one, the first `lostShown` items of what it lost and their count).
/// With `golden` (`--golden`), the views at the acknowledged points are
/// taken first, in slot 0's directory, and each state's view is compared
/// with them (after the checker passed, if there is one: on the state made
/// again, as the checker may have changed it): both must pass.
/// A checker that runs longer than `timeout` has its process group killed
/// and its state fails as timed out. SIGINT or SIGTERM (`TerminationRequests`)
/// stops the checking: the checkers running are killed, and the results so
/// far are returned. Progress on stderr: on a terminal a line redrawn in
/// place, else a line every `progressSeconds`.
struct ExploreChecker {
    let work: String
    let base: String
    let data: FileDescriptor
    /// `--check`: nil when only `--golden` judges.
    let check: String?
    let parallel: Int
    let output: [UInt8]
    /// The recorded run under each model explored (one at least).
    let explorations: [CrashExploration]
    let keep: String?
    /// Seconds one checker run may take.
    var timeout: UInt64?
    /// `--golden`, its views not taken yet.
    var golden: ExploreGolden?

    /// Items of a failed state's loss the report lists; the rest are counted.
    static let lostShown = 10
    /// Seconds between progress lines off a terminal.
    static let progressSeconds = 10.0

    struct Result {
        var id: CrashExploration.StateID
        var passed: Bool
        var stderr: String
        /// What the report says of a failed state (nil when it passed).
        var failure: Failure?
        /// The models under which the state can happen.
        var models: [CrashFilesystemModel] = []
    }

    struct Failure {
        var operation: String
        var lastDurable: (point: Int, text: String)?
        /// The first `lostShown` items.
        var lost: [String]
        var lostCount: Int
        var kind: Kind = .corruption
    }

    /// What a failure looks like: a checker's verdict, a timeout or a view
    /// `--golden` found at no reference point is corruption-like (the state
    /// is damaged or half-made); a view from before the last acknowledged
    /// point is an acknowledgment lost (whole, but older than promised).
    enum Kind: String {
        case corruption
        case lostAcknowledgment = "lost-acknowledgment"
    }

    struct Outcome {
        /// The states checked, in exploration order.
        var results: [Result]
        /// The signal that stopped the checking before every state was checked.
        var interruptedBy: Int32?
    }

    private struct Running {
        var pid: ProcessID
        var slot: Int
        var index: Int
        var state: CrashExploration.State
        var models: [CrashFilesystemModel]
        var started: Double
        /// Running `--golden` (else the checker).
        var golden: Bool
    }

    /// Checks the states `ids` names, in that order, under each model (a
    /// state several models leave alike once, `CrashExploration.labelledIterator`);
    /// `sizes`: the entries of each (`CrashExploration.sizedStateIDs`), for the time left.
    func check(_ ids: [CrashExploration.StateID], sizes: [Int]) throws(CommandExit) -> Outcome {
        var golden = self.golden
        var builders: [CrashStateBuilder] = []
        do throws(Errno) {
            for slot in 0..<parallel {
                builders.append(try CrashStateBuilder(directory: work + "/state\(slot)", base: base, data: data))
            }
        } catch {
            throw .failure("explore: cannot make the state directories in \(work): \(error)")
        }
        if golden != nil, let signal = try golden!.takeViews(of: explorations[0], output: output, builder: builders[0], work: work, timeout: timeout) {
            return Outcome(results: [], interruptedBy: signal)
        }
        var states = CrashExploration.labelledIterator(explorations, ids: ids, lostLimit: Self.lostShown)
        /// States in all: one an id until the models split one.
        var count: Int { states.expected }
        var results: [Result?] = []
        var running: [Running] = []
        var done = 0
        var failed = 0
        let started = WallClock.seconds()
        let terminal = FileDescriptor.standardError.isTerminal
        var lastProgress = started
        var estimate = TimeLeft(sizes: sizes, parallel: parallel)
        /// Per slot, whether the state it built last was a names-lost one (nil: none yet).
        var slotHoldsNamesLost: [Bool?] = Array(repeating: nil, count: parallel)
        let environment = ExploreJob.environment
        /// Starts the state's checker, or its `--golden` run.
        func start(_ state: CrashExploration.State, slot: Int, golden: Bool) throws(Errno) -> ProcessID {
            try ExploreJob.start(golden ? self.golden!.command : check!, state: builders[slot].directory, point: state.id.point,
                                 output: work + "/output\(slot)", view: golden ? work + "/view\(slot)" : nil,
                                 stderr: work + "/stderr\(slot)", environment: environment)
        }
        func stopAll() {
            for job in running {
                try? ProcessGroup.signal(job.pid, SIGKILL)
                _ = try? ChildProcess.wait(job.pid)
            }
            running.removeAll()
        }
        defer { if terminal { try? FileDescriptor.standardError.writeAll("\r\u{1B}[K") } }
        while done < count {
            if let signal = TerminationRequests.pending {
                stopAll()
                return Outcome(results: results.compactMap { $0 }, interruptedBy: signal)
            }
            // Start states on free slots.
            while let upcoming = states.upcoming, running.count < parallel {
                let free = (0..<parallel).filter { slot in !running.contains { $0.slot == slot } }
                // A names-lost state goes where the last names-lost state was
                // built, the others where names were kept: a slot keeps what
                // its previous state shares with the next, and the two ends of
                // a name range can differ in every name (thousands of files
                // made again at each state, when they alternate between slots).
                // When that slot is busy, the state waits for it.
                let namesLost = upcoming.variant == .namesLost
                guard let slot = free.first(where: { slotHoldsNamesLost[$0] == namesLost })
                    ?? free.first(where: { slotHoldsNamesLost[$0] == nil })
                    ?? (slotHoldsNamesLost.contains(namesLost) ? nil : free.first) else { break }
                slotHoldsNamesLost[slot] = namesLost
                let building = WallClock.seconds()
                let expected = states.expected
                guard let (state, models) = states.next() else { break }
                // States the models split this id into beyond the one counted.
                for _ in 0..<max(0, states.expected - expected) { estimate.added(states.position) }
                do throws(Errno) {
                    try builders[slot].build(state)
                    try ExploreJob.writeOutput(output, length: outputLength(at: state.id.point), to: work + "/output\(slot)")
                    let pid = try start(state, slot: slot, golden: check == nil)
                    let now = WallClock.seconds()
                    estimate.built(states.position, seconds: now - building)
                    running.append(Running(pid: pid, slot: slot, index: results.count, state: state, models: models, started: now,
                                           golden: check == nil))
                    results.append(nil)
                } catch {
                    stopAll()
                    throw .failure("explore: cannot build or check state \(state.id): \(error)")
                }
            }
            if running.isEmpty { break }  // fewer states than ids (none past the last operation)
            // Reap what ended, and what ran out of time.
            var ended = false
            let now = WallClock.seconds()
            for (position, job) in running.enumerated().reversed() {
                var status = try? ChildProcess.poll(job.pid)
                var timedOut = false
                if status == nil, let timeout, now - job.started >= Double(timeout) {
                    try? ProcessGroup.signal(job.pid, SIGKILL)
                    status = try? ChildProcess.wait(job.pid)
                    timedOut = true
                }
                guard let status else { continue }
                try? ProcessGroup.signal(job.pid, SIGKILL)  // whatever it left running in its group
                var stderr = timedOut ? "timed out after \(DurationSeconds(seconds: timeout ?? 0))" : Self.lastLine(of: work + "/stderr\(job.slot)")
                if !timedOut, status.exitCode == 127 {
                    stopAll()
                    throw .failure("explore: the \(job.golden ? "--golden command" : "checker") could not run (sh -c exited 127): \(stderr)")
                }
                var passed = !timedOut && status.exitCode == 0
                var kind = Kind.corruption
                let state = job.state
                if job.golden, !timedOut, let golden {
                    let verdict = golden.verdict(ExploreJob.view(at: work + "/view\(job.slot)", status: status),
                                                 outputLength: outputLength(at: state.id.point))
                    passed = verdict == .passed
                    stderr = verdict.message ?? ""
                    if case .lostAcknowledgment = verdict { kind = .lostAcknowledgment }
                } else if passed, golden != nil {
                    // The checker passed: the view of the state as the crash left it (made again: the checker may have changed it).
                    do throws(Errno) {
                        try builders[job.slot].build(state)
                        running[position].pid = try start(state, slot: job.slot, golden: true)
                        running[position].golden = true
                        running[position].started = now
                    } catch {
                        stopAll()
                        throw .failure("explore: cannot check state \(state.id) with --golden: \(error)")
                    }
                    continue
                }
                running.remove(at: position)
                ended = true
                estimate.checked(seconds: now - job.started)
                results[job.index] = Result(
                    id: state.id, passed: passed, stderr: stderr,
                    failure: passed ? nil : Failure(operation: state.operation, lastDurable: state.lastDurable, lost: state.lost,
                                                    lostCount: state.lostCount, kind: kind),
                    models: job.models)
                done += 1
                if !passed {
                    failed += 1
                    if let keep { try keepState(state, in: keep) }
                }
            }
            let progressNow = WallClock.seconds()
            if terminal, progressNow - lastProgress > 0.25 || done == count {
                lastProgress = progressNow
                try? FileDescriptor.standardError.writeAll("\r\u{1B}[K" + Self.progress(done: done, of: count, failed: failed, left: estimate.secondsLeft))
            } else if !terminal, progressNow - lastProgress >= Self.progressSeconds, done < count {
                lastProgress = progressNow
                try? FileDescriptor.standardError.writeAll(Self.progress(done: done, of: count, failed: failed, left: estimate.secondsLeft) + "\n")
            }
            if !ended { CurrentProcess.sleep(milliseconds: 2) }
        }
        return Outcome(results: results.compactMap { $0 }, interruptedBy: nil)
    }

    /// The time left: building a state takes a time of its own plus a time
    /// per entry (a least-squares line through the states built so far,
    /// applied to the states not built yet, whose entries are known), one
    /// state at a time; checking one takes the mean time so far, `parallel`
    /// at once, while the next are built. The longer of the two: the first
    /// states of a run that makes files, the smallest, make the rest look
    /// neither cheap nor, through their fixed cost, dear.
    struct TimeLeft {
        let sizes: [Int]
        let parallel: Int
        private var entriesLeft: Double
        private var buildsLeft: Int
        private var statesLeft: Int
        /// Sums over the states built: count, entries, seconds, entries × seconds, entries².
        private var builds = 0.0, sumEntries = 0.0, sumSeconds = 0.0, sumProduct = 0.0, sumSquares = 0.0
        private var checkSeconds = 0.0, checksDone = 0

        init(sizes: [Int], parallel: Int) {
            self.sizes = sizes
            self.parallel = max(1, parallel)
            entriesLeft = Double(sizes.reduce(0, +))
            buildsLeft = sizes.count
            statesLeft = sizes.count
        }

        /// One more state of the id at `index` than counted (the models left it two ways).
        mutating func added(_ index: Int) {
            entriesLeft += Double(sizes[index])
            buildsLeft += 1
            statesLeft += 1
        }

        mutating func built(_ index: Int, seconds: Double) {
            let entries = Double(sizes[index])
            builds += 1
            sumEntries += entries
            sumSeconds += seconds
            sumProduct += entries * seconds
            sumSquares += entries * entries
            entriesLeft -= entries
            buildsLeft -= 1
        }

        mutating func checked(seconds: Double) {
            checkSeconds += seconds
            checksDone += 1
            statesLeft -= 1
        }

        /// Seconds to build a state, and per entry.
        var buildLine: (fixed: Double, perEntry: Double) {
            guard builds > 0 else { return (0, 0) }
            let spread = builds * sumSquares - sumEntries * sumEntries
            var perEntry = spread > 0 ? (builds * sumProduct - sumEntries * sumSeconds) / spread : 0
            perEntry = max(0, perEntry)
            var fixed = (sumSeconds - perEntry * sumEntries) / builds
            if fixed < 0 {
                fixed = 0
                perEntry = sumEntries > 0 ? sumSeconds / sumEntries : 0
            }
            return (fixed, perEntry)
        }

        /// Nil before the first check ended.
        var secondsLeft: Double? {
            guard checksDone > 0, builds > 0 else { return nil }
            let line = buildLine
            let building = line.fixed * Double(buildsLeft) + line.perEntry * max(0, entriesLeft)
            return max(building, checkSeconds / Double(checksDone) * Double(statesLeft) / Double(parallel))
        }
    }

    /// `explore: 120 of 1000 states checked, 3 failed, about 4 min left`.
    static func progress(done: Int, of count: Int, failed: Int, left: Double?) -> String {
        let estimate: String
        guard let left else { return "explore: \(done) of \(count) states checked, \(failed) failed, starting" }
        if left < 90 {
            estimate = "about \(Int(left.rounded())) s left"
        } else if left < 5400 {
            estimate = "about \(Int((left / 60).rounded())) min left"
        } else {
            estimate = "about \(ExploreReport.format(left / 3600)) h left"
        }
        return "explore: \(done) of \(count) states checked, \(failed) failed, \(estimate)"
    }

    /// Bytes of the command's stdout printed before operation `point` + 1 (all of it after the last operation).
    private func outputLength(at point: Int) -> UInt64 {
        point >= explorations[0].operationCount ? UInt64(output.count) : min(UInt64(output.count), explorations[0].outputLength(at: point))
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
