import Glibc
import PurgeCore
import PurgeEngines
import PurgeSys

/// `purgefs explore [-o OPTS] [--check CMD] [--golden CMD] [--model NAME | --models LIST]
/// [--torn] [--max-states N] [--keep DIR] [--timeout DURATION] [--check-timeout DURATION] [--json] [--report
/// FILE] [--html FILE] CONTAINER -- COMMAND [ARG...]`: runs the
/// command once on a recorded mount of a copy of the container, then
/// checks every crash state of that run (`CrashExploration`) with CMD.
/// `purgefs explore --replay REPORT STATE DIR` makes one state again.
struct ExploreCommand: Subcommand {
    static let name = "explore"
    static let abstract = "Run a command once, then check that it recovers from a power loss at every point that matters"
    static var help: String {
        """
        Usage: purgefs explore [-o OPTS] [--check CMD] [--golden CMD]
                               [--model NAME | --models LIST] [--torn]
                               [--max-states N] [--keep DIR]
                               [--timeout DURATION] [--check-timeout DURATION]
                               [--json] [--report FILE] [--html FILE] [--junit FILE]
                               CONTAINER -- COMMAND [ARG...]
               purgefs explore --replay REPORT STATE DIR

        \(TextLayout.paragraph(
            "Runs COMMAND once, as purgefs run does (its own process group, PURGEFS_MOUNT set), on a mount of a "
            + "copy of CONTAINER (CONTAINER itself is only read), recording every operation that changes the "
            + "container, with its data, and where the command's stdout came among them; its stderr goes to a file "
            + "whose last lines the report keeps. With --timeout the command gets SIGTERM when its time is up (SIGKILL "
            + "after a grace period) and what it did until then is explored. Then explore builds each crash state of "
            + "that run, one at a time in each of its slots, and runs CMD (through sh -c) on it, two at a time on a "
            + "machine with 2 CPUs or more. With --check-timeout a checker still running when its time is up has its "
            + "process group killed, and its state fails as timed out."))

        \(TextLayout.paragraph(
            "Crash states follow a model of the filesystem (--model, ext4 by default). The state at point k is what "
            + "the container could hold if the power went right after operation k (k = 1 to the number of operations): "
            + "every file holds what it held at its last fsync, fdatasync, O_SYNC/O_DSYNC write or msync(MS_SYNC) "
            + "before k (the base's content if never synced; empty if the run made it and never synced it), no byte "
            + "written since unless the model writes it; name changes (create, mkdir, symlink, link, unlink, rmdir, "
            + "rename) and truncates persist in their order up to a point between the last one made durable (by an "
            + "fsync of its directory, or under every model but posix of the file, which makes every earlier change "
            + "durable too) and k. For every k two states are explored, the two ends of that range: "
            + "names-kept (every change up to k persisted) and names-lost (only the durable ones; explored only "
            + "when they differ). Every k is explored, so every point right before and right after each durable "
            + "operation is. With --torn, also torn-P for P = 1 to the number of 4 KiB pages written since their "
            + "file's last sync: names kept and the first P pages written survive. sync(2) and syncfs(2) are not "
            + "seen (Linux does not pass them to a FUSE filesystem): only fsync makes anything durable."))

        \(TextLayout.paragraph(
            "Models: ext4 (default mount options: data=ordered, delayed allocation, auto_da_alloc, which writes a file "
            + "renamed over an existing name before the rename commits); ext4-noauto_da_alloc and xfs (no such flush: "
            + "the renamed file may be empty); btrfs (its rename only starts the writeback: no flush without "
            + "flushoncommit); posix (a file's fsync never makes its name durable, and reordered-N: names kept and only "
            + "page N, written at k, of the unsynced pages survives, those before it lost). --models LIST (names "
            + "separated by commas, or all) checks each state once and labels each failure with the models under "
            + "which it can happen; the report says which fail and which survive."))

        \(TextLayout.paragraph(
            "--golden CMD is a checker for free: CMD prints a view of a state (sqlite3 app.db .dump, cat config.json), "
            + "run through sh -c in the state's directory with the checker's variables and --check-timeout. Each line "
            + "COMMAND printed is an acknowledgment, placed where it came among the operations; the view (stdout and "
            + "exit status) is taken of the container as COMMAND saw it at the start, at each acknowledgment and at "
            + "the end, and a crash state passes when its view equals the one at the last line printed before the "
            + "crash, or a later one. It fails with \"view matches line M, before the last acknowledged: line N\" (an "
            + "acknowledgment lost) or \"view matches no acknowledged point; last acknowledged: line N\". With --check "
            + "too, both must pass (the view is taken after the checker passed, of the state made again). When every "
            + "line came after the last operation, as block-buffered output does, explore warns: use stdbuf -oL or "
            + "flush after each line."))

        \(TextLayout.paragraph(
            "CMD gets PURGEFS_CRASH_STATE (a directory holding the state, its own for this state), "
            + "PURGEFS_CRASH_POINT (k) and PURGEFS_CRASH_OUTPUT (a file with what COMMAND had printed on stdout "
            + "before operation k + 1 began); exit 0 means the app recovered. Its stdout is discarded; the last line "
            + "of its stderr is reported. A CMD whose first word is not found is refused before anything runs."))

        \(TextLayout.paragraph(
            "The report (stdout): states explored, passed and failed; how the command ended (its exit status, or that "
            + "it ran out of time) and the last 20 lines of its stderr; then every group of failed states (the same "
            + "operation at k, a write's byte range left out, the same last durable operation and the same message; "
            + "corruption-like groups first, then lost acknowledgments) with its count, message and smallest state "
            + "(the one that lost least); then for each failed state (the first 20; all with --json) the point and "
            + "variant, the operation at k and the last durable one before it (paths relative to the container), what "
            + "the state lost compared with the moment of the crash (the first 10 items and how many there are in all, "
            + "lostCount in JSON), and the checker's last line of stderr or --golden's verdict. --json prints the "
            + "report as JSON; --report FILE writes it to FILE and keeps the recording beside it (FILE.recording), "
            + "which --replay needs; --junit FILE writes it as JUnit XML for CI."))

        \(TextLayout.paragraph(
            "SIGINT or SIGTERM (or SIGHUP) ends the exploration early: the checkers running are killed, the report "
            + "of the states checked so far is printed and written (\"interrupted\": true; the text says interrupted "
            + "after K of N states), and the work directory is removed. Off a terminal a progress line goes to stderr "
            + "every 10 s: states checked of all, failed so far, an estimate of the time left."))

        \(TextLayout.paragraph(
            "Exit status: 0 when every state passed and the command exited 0; 1 when a state failed, when the command "
            + "exited non-zero, was killed or ran out of time (a finding too), or when the exploration could not be "
            + "made; 128 + the signal (130 for SIGINT, 143 for SIGTERM) when a signal ended it early, whatever it "
            + "found; 64 on a usage error."))

        Flags:
        \(flags.rows)

        Example:
          purgefs explore --check 'test -s "$PURGEFS_CRASH_STATE/config.json"' \\
              ~/app -- ./save-config
        """
    }

    /// How many failed states the text report shows.
    static let shownFailures = 20

    static let flags = FlagTable<Self>(
        name, options: (\.options, "mount options for the run (see purgefs mount --help); may be given more than once"), [
            .value("--check", "CMD", \.checkArgument, "the checker, run through sh -c for each state"),
            .value("--golden", "CMD", \.golden, "a view of a state (run in it): each state's must be one the command acknowledged"),
            .value("--model", "NAME", \.modelArgument, "the crash model: ext4 (default), ext4-noauto_da_alloc, xfs, btrfs or posix"),
            .value("--models", "LIST", \.modelsArgument, "explore under several models (names separated by commas, or all)"),
            .switch("--torn", \.torn, "also the states where a prefix of the unsynced writes survives, in whole 4 KiB pages"),
            .value("--max-states", "N", \.maxStates,
                   "check at most N states, evenly spaced in exploration order (the report says sampled)") { (value) throws(CommandExit) in
                guard let count = Int(value.text), count >= 1 else {
                    throw .usage("\(value.command): \(value.flag) needs a number of states, at least 1 (got \(value.text))")
                }
                return count
            },
            .value("--timeout", "DURATION", \.timeout, "stop the command after DURATION (90s, 10m, 1h) and explore what it did") {
                (value) throws(CommandExit) in try duration(value, for: "the command's run")
            },
            .value("--check-timeout", "DURATION", \.checkTimeout, "a checker run longer than DURATION is killed: its state fails as timed out") {
                (value) throws(CommandExit) in try duration(value, for: "one checker run")
            },
            .value("--keep", "DIR", \.keepArgument,
                   "make each failed state again in DIR/POINT-VARIANT, and the recording in DIR/recording (DIR new or empty)"),
            .switch("--json", \.json, "print the report as JSON"),
            .value("--report", "FILE", \.reportArgument, "write the JSON report to FILE, and the recording to FILE.recording"),
            .value("--junit", "FILE", \.junitArgument, "write the report as JUnit XML: a failing test case per group, one for the states that passed"),
            .value("--html", "FILE", \.htmlArgument, "write the report as one self-contained page: the states as a strip along the operations"),
            .helpRow(replayFlag + " REPORT STATE DIR",
                     "make state STATE (POINT or POINT/VARIANT, as the report names it) of REPORT in DIR, which must not exist"),
        ])
    /// Taken before the table: the rest of the arguments are its three.
    static let replayFlag = "--replay"

    /// A DURATION flag's value; `role` says what it limits.
    private static func duration(_ value: FlagValue, for role: String) throws(CommandExit) -> DurationSeconds? {
        do throws(ValueError) {
            return try DurationSeconds(parsing: value.text)
        } catch {
            throw .usage("\(value.command): \(value.flag) needs a duration for \(role), such as 90s, 10m or 1h (got \(value.text): \(error))")
        }
    }

    var containerArgument = ""
    var options: [String] = []
    /// `--check CMD`, as given.
    var checkArgument: String?
    /// `--check`: empty when only `--golden` is given.
    private(set) var check = ""
    /// `--golden CMD`.
    var golden: String?
    /// `--junit FILE`.
    var junitArgument: String?
    private(set) var junitPath: String?
    var torn = false
    /// `--model NAME` and `--models LIST`, as given.
    var modelArgument: String?
    var modelsArgument: String?
    /// The models the states follow: `--model NAME` (ext4 by default) or `--models LIST`.
    private(set) var models: [CrashFilesystemModel] = [.ext4]
    var maxStates: Int?
    var timeout: DurationSeconds?
    var checkTimeout: DurationSeconds?
    var keepArgument: String?
    var json = false
    var reportArgument: String?
    var htmlArgument: String?
    private(set) var htmlPath: String?
    var command: [String] = []
    var replay: (report: String, state: CrashExploration.StateID, directory: String)?
    private(set) var container = ""
    private(set) var keep: String?
    private(set) var reportPath: String?

    init(parsing arguments: [String]) throws(CommandExit) {
        if let index = arguments.firstIndex(of: Self.replayFlag), !arguments.prefix(upTo: index).contains("--") {
            if arguments.contains(where: { $0 == "-h" || $0 == "--help" }) { throw .help(Self.help) }
            let rest = arguments.filter { $0 != Self.replayFlag }
            guard rest.count == 3 else { throw .usage("explore: --replay takes REPORT STATE DIR and nothing else") }
            guard let state = CrashExploration.StateID(rest[1]) else {
                throw .usage("explore: \(rest[1]) is not a state (POINT or POINT/VARIANT, as the report names it)")
            }
            replay = (rest[0], state, rest[2])
            return
        }
        guard let separator = arguments.firstIndex(of: "--") else {
            if arguments.contains(where: { $0 == "-h" || $0 == "--help" }) { throw .help(Self.help) }
            throw .usage("explore: put -- before the command: purgefs explore --check CMD CONTAINER -- COMMAND [ARG...]")
        }
        command = Array(arguments[(separator + 1)...])
        // -o may come more than once, and as -oOPTS: the table collects it before the rest is parsed.
        let parsed = try Self.flags.parse(Array(arguments[..<separator]), help: Self.help, into: &self)
        containerArgument = try parsed.onePath("CONTAINER", command: Self.name)
        try Self.flags.apply(parsed, to: &self)
        if let golden, golden.allSatisfy(\.isWhitespace) { throw .usage("explore: --golden needs a command") }
        guard let check = checkArgument ?? (golden != nil ? "" : nil) else {
            throw .usage("explore: --check CMD is required, or --golden CMD: the command that tells whether a crash state recovered")
        }
        guard golden != nil || !check.allSatisfy(\.isWhitespace) else { throw .usage("explore: --check needs a command") }
        self.check = check
        guard let program = command.first, !program.isEmpty else {
            throw .usage("explore: the command after -- is missing (see purgefs explore --help)")
        }
        let names = CrashFilesystemModel.allCases.map(\.rawValue).joined(separator: ", ")
        switch (modelArgument, modelsArgument) {
        case (.some, .some): throw .usage("explore: give --model NAME or --models LIST, not both")
        case (.some(let name), nil):
            guard let model = CrashFilesystemModel(rawValue: name) else { throw .usage("explore: --model \(name) is not a model (\(names))") }
            models = [model]
        case (nil, .some(let list)):
            guard let chosen = CrashFilesystemModel.list(list) else { throw .usage("explore: --models takes all or names separated by commas (\(names)); got \(list)") }
            models = chosen
        case (nil, nil): break
        }
        let mount = try MountCommand(parsing: [containerArgument] + options.flatMap { ["-o", $0] })
        if mount.options.stateDirectory != nil { throw .usage("explore: the copy gets a fresh state of its own; state= cannot be given") }
        if mount.options.record != nil { throw .usage("explore: record= is explore's own") }
    }

    mutating func validate() throws(CommandExit) {
        if replay != nil { return }
        container = try MountCommand.resolveDirectory(containerArgument, role: "container")
        if let keepArgument {
            keep = try Self.absolute(keepArgument)
            try Self.requireNewOrEmpty(keepArgument)
        }
        if let reportArgument { reportPath = try Self.absolute(reportArgument) }
        if let htmlArgument { htmlPath = try Self.absolute(htmlArgument) }
        if let junitArgument { junitPath = try Self.absolute(junitArgument) }
        if let missing = Self.missingProgram(check) {
            throw .usage("explore: the checker cannot run: \(missing): command not found")
        }
        if let golden, let missing = Self.missingProgram(golden) {
            throw .usage("explore: the --golden command cannot run: \(missing): command not found")
        }
        guard Paths.exists("/dev/fuse") else {
            throw .failure("explore: /dev/fuse is missing, so nothing can be mounted (load the fuse module)")
        }
    }

    /// `--keep DIR` gets a directory per failed state and the recording,
    /// each replacing one of the same name; so DIR must be new or empty,
    /// and nothing explore did not make is ever replaced or removed.
    static func requireNewOrEmpty(_ path: String) throws(CommandExit) {
        let directory: FileDescriptor
        do throws(Errno) {
            directory = try FileDescriptor.open(path: path, flags: O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        } catch {
            if error == .noEntry { return }
            throw .usage("explore: --keep \(path): \(error == Errno(ENOTDIR) ? "not a directory" : "\(error)")")
        }
        defer { directory.closeQuietly() }
        var empty = true
        do throws(Errno) {
            let stream = try DirectoryStream(directory)
            while empty, let entry = try stream.next() { empty = entry.isDotOrDotDot }
        } catch {
            throw .usage("explore: --keep \(path): \(error)")
        }
        if !empty { throw .usage("explore: --keep \(path) is not empty: give a new or empty directory, whose contents explore writes") }
    }

    static func absolute(_ path: String) throws(CommandExit) -> String {
        if path.hasPrefix("/") { return path }
        do throws(Errno) {
            return try Paths.workingDirectory() + "/" + path
        } catch {
            throw .failure("explore: cannot resolve \(path): \(error)")
        }
    }

    /// The checker's first word when it is a program that is not there
    /// (not a shell word, not a path that exists, not in `$PATH`).
    static func missingProgram(_ check: String) -> String? {
        guard let first = check.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).first.map(String.init) else { return nil }
        let shellWords: Set<String> = ["!", "{", "(", "if", "for", "while", "until", "case", "test", "[", "[[", "true", "false", ":", ".",
                                       "cd", "echo", "printf", "exit", "set", "export", "read", "exec", "eval", "command", "type"]
        if shellWords.contains(first) || first.contains("=") || first.contains("$") || first.contains("'") || first.contains("\"")
            || first.hasPrefix("(") || first.hasPrefix("{") { return nil }
        if first.contains("/") { return Paths.isExecutable(first) ? nil : first }
        let path = CurrentProcess.environmentValue("PATH") ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") where Paths.isExecutable("\(directory)/\(first)") { return nil }
        return first
    }

    func run(_ context: CommandContext) throws(CommandExit) {
        if let replay {
            try ExploreReplay.run(report: replay.report, state: replay.state, into: replay.directory)
            return
        }
        do throws(Errno) {
            try TerminationRequests.install()
        } catch {
            throw .failure("explore: cannot catch SIGINT and SIGTERM: \(error)")
        }
        defer { TerminationRequests.restoreDefaults() }
        let session = ExploreSession(container: container, options: options, command: command, check: check, golden: golden, torn: torn,
                                     models: models, maxStates: maxStates, timeout: timeout, checkTimeout: checkTimeout, keep: keep,
                                     reportPath: reportPath, htmlPath: htmlPath, junitPath: junitPath)
        let report = try session.run()
        let text = json ? report.json.pretty + "\n" : report.text(shown: Self.shownFailures)
        try? FileDescriptor.standardOutput.writeAll(text)
        if report.exitStatus != 0 { throw .passOn(report.exitStatus) }
    }
}
