import Glibc
import PurgeCore
import PurgeEngines
import PurgeSys

/// `purgefs run [-o OPTS] [--scenario FILE] [--scratch] [--json] [--report
/// FILE] CONTAINER -- COMMAND [ARG...]`: mounts the container, runs the
/// command on it (playing the scenario meanwhile), unmounts however the
/// command ended, and says what happened.
struct RunCommand: Subcommand {
    static let name = "run"
    static let abstract = "Run a command on a mounted container, then unmount and summarize"
    static var help: String {
        """
        Usage: purgefs run [-o OPTS] [--scenario FILE] [--restart-after-crash] [--scratch]
                           [--json] [--report FILE] [--html FILE] CONTAINER -- COMMAND [ARG...]
               purgefs run --explore --check CMD [explore's flags] CONTAINER -- COMMAND [ARG...]

        \(TextLayout.paragraph(
            "Mounts CONTAINER in place (with the mount options of -o, as purgefs mount takes them), runs COMMAND "
            + "with PURGEFS_MOUNT set to the mount in its environment (and in the same directory as run, looked up "
            + "again through the mount), and unmounts once the command has ended: when it exits, when it is "
            + "killed, and when run itself gets Ctrl-C (SIGINT), SIGTERM or SIGHUP, which it passes on to the "
            + "command's process group (and SIGKILL \(Self.graceMilliseconds / 1000) s later if the group is still there). "
            + "What the command leaves running in its process group gets SIGKILL once it has ended. "
            + "Nothing is left mounted. run exits with the command's status (128 + N when signal N killed it, as "
            + "shells do); 1 when the run itself failed (the mount, a scenario step); 64 on a usage error."))

        \(TextLayout.paragraph(
            "With --scratch, a copy of CONTAINER is mounted instead (cp -a --reflink=auto into a temporary "
            + "directory, without its .purgefs state), the original is left untouched, and the copy is removed "
            + "afterwards. state= cannot be given with it."))

        \(TextLayout.paragraph(
            "With --scenario FILE, steps are applied while the command runs, in file order, each once the one "
            + "before it is done and its trigger holds; FILE is read, and every error reported with its line, "
            + "before anything is mounted. A step is one line: a trigger, an optional timeout, an action; "
            + "# starts a comment; words may be quoted as in a shell."))

        Triggers:
        \(TextLayout.row("at DURATION", "this long after the command started (500ms, 2s, 1.5m, 1h)"))
        \(TextLayout.row("when used > SIZE|N%", "the device's used space (device_used; N% of the capacity) is above it"))
        \(TextLayout.row("when available < SIZE", "available space is below it"))
        \(TextLayout.row("when file PATH exists", "PATH (relative to the container) exists"))
        \(TextLayout.row("... timeout DURATION", "after a when trigger: fail the run if it has not held within DURATION"))

        Actions (each runs this purgefs's own command on the mount):
        \(TextLayout.row("squeeze SIZE", "leave SIZE available, by setting external usage (purgefs space --available SIZE)"))
        \(TextLayout.row("external SIZE", "purgefs space --external SIZE"))
        \(TextLayout.row("capacity SIZE", "purgefs space --capacity SIZE"))
        \(TextLayout.row("purge SIZE|all", "purgefs purge --bytes SIZE | --all"))
        \(TextLayout.row("pin PATH, unpin PATH", "purgefs pin | unpin, PATH relative to the container"))
        \(TextLayout.row("fault ARGS...", "purgefs fault add MOUNTPOINT ARGS... (fault injection)"))
        \(TextLayout.row("crash", "a power loss: the command's process group gets SIGKILL, then purgefs crash MOUNTPOINT; the step says what it undid"))
        \(TextLayout.row("restart", "start the command again (after a crash: on the crashed state); the step says how it ended"))

        \(TextLayout.paragraph(
            "A step that fails (its command fails, or is not in this purgefs), or a timeout that runs out, fails "
            + "the run: the command gets SIGTERM, the mount is taken down, the summary marks the step, and run "
            + "exits 1 with one line naming the file's line. Steps the command did not live to see are not_reached."))

        \(TextLayout.paragraph(
            "The summary goes to stderr (stdout is the command's): how the command ended, peak used, what was "
            + "purged by reason, requests answered ENOSPC, faults injected (n/a without fault injection), clone "
            + "savings, and each scenario step. --json prints it as JSON instead; --report FILE also writes the "
            + "JSON to FILE. Its fields:"))
        \(RunSummary.fieldHelp.map { TextLayout.row($0.0, paragraphs: [$0.1]) }.joined(separator: "\n"))
        With --json, --report or --html, also:
        \(RunTimeline.fieldHelp.map { TextLayout.row($0.0, paragraphs: [$0.1]) }.joined(separator: "\n"))

        \(TextLayout.paragraph(
            "--html FILE writes the report as one self-contained page (no network): the timeline of device used, "
            + "container used, purgeable and available, the low and high marks, a mark for each scenario step, "
            + "purge, ENOSPC answer, injected fault and crash (hover one for what it was), the summary, and the "
            + "storage at the start and the end. purgefs report REPORT.json --html FILE draws it again from --report."))

        Flags:
        \(flags.rows)

        Example:
          purgefs run -o capacity=200M --scenario low-disk.txt ~/app -- swift test
        """
    }

    /// `RunJob`'s, which `explore` waits with too.
    static let graceMilliseconds = RunJob.graceMilliseconds
    static let tickMilliseconds = RunJob.tickMilliseconds

    static let flags = FlagTable<Self>(
        name, options: (\.options, "mount options (see purgefs mount --help); may be given more than once"), [
            .value("--scenario", "FILE", \.scenarioArgument, "steps to apply while the command runs"),
            .switch("--scratch", \.scratch, "mount a copy, leave CONTAINER untouched, remove the copy after"),
            .switch("--json", \.json, "print the summary as JSON (on stderr)"),
            .value("--report", "FILE", \.reportArgument, "write the summary as JSON to FILE"),
            .value("--html", "FILE", \.htmlArgument, "write the run's page (timeline and summary) to FILE"),
            .switch("--restart-after-crash", \.restartAfterCrash, "start the command again after each crash step, on the crashed state"),
            .helpRow(exploreFlag + " --check CMD",
                     "instead of one run, purgefs explore with the same arguments (see purgefs explore --help)"),
        ])
    /// Taken before the table: the rest of the arguments are explore's.
    static let exploreFlag = "--explore"

    var containerArgument = ""
    var options: [String] = []
    var scenarioArgument: String?
    var scratch = false
    var json = false
    var restartAfterCrash = false
    var reportArgument: String?
    var htmlArgument: String?
    var command: [String] = []
    /// Set by `validate()`.
    private(set) var container = ""
    private(set) var scenario: Scenario?
    private(set) var reportPath: String?
    private(set) var htmlPath: String?

    /// `--explore`: the run is `purgefs explore` with the same arguments.
    private(set) var explore: ExploreCommand?

    init(parsing arguments: [String]) throws(CommandExit) {
        if let flag = arguments.firstIndex(of: Self.exploreFlag), arguments.firstIndex(of: "--").map({ flag < $0 }) ?? true {
            var rest = arguments
            rest.remove(at: flag)
            explore = try ExploreCommand(parsing: rest)
            containerArgument = explore!.containerArgument
            options = explore!.options
            command = explore!.command
            return
        }
        guard let separator = arguments.firstIndex(of: "--") else {
            if arguments.contains(where: { $0 == "-h" || $0 == "--help" }) { throw .help(Self.help) }
            throw .usage("run: put -- before the command: purgefs run CONTAINER -- COMMAND [ARG...] (see purgefs run --help)")
        }
        command = Array(arguments[(separator + 1)...])
        // -o may come more than once, and as -oOPTS: the table collects it before the rest is parsed.
        let parsed = try Self.flags.parse(Array(arguments[..<separator]), help: Self.help, into: &self)
        containerArgument = try parsed.onePath("CONTAINER", command: Self.name)
        guard let program = command.first, !program.isEmpty else {
            throw .usage("run: the command after -- is missing (see purgefs run --help)")
        }
        try Self.flags.apply(parsed, to: &self)
        // The options as the mount reads them, so a bad one is a usage error before anything happens.
        let mount = try MountCommand(parsing: [containerArgument] + options.flatMap { ["-o", $0] })
        if scratch && mount.options.stateDirectory != nil {
            throw .usage("run: --scratch gives the copy a fresh state of its own; state= cannot be given with it")
        }
    }

    mutating func validate() throws(CommandExit) {
        if explore != nil { return try explore!.validate() }
        container = try MountCommand.resolveDirectory(containerArgument, role: "container")
        if let scenarioArgument {
            let bytes: [UInt8]
            do throws(Errno) {
                bytes = try FileDescriptor.readFile(scenarioArgument, limit: 1 << 20)
            } catch {
                throw .failure("run: cannot read the scenario \(scenarioArgument): \(error)")
            }
            do throws(ScenarioError) {
                scenario = try Scenario(parsing: String(decoding: bytes, as: UTF8.self), file: scenarioArgument)
            } catch {
                throw .usage(error.description)
            }
        }
        if let reportArgument {
            reportPath = try Self.absolute(reportArgument)
        }
        if let htmlArgument {
            htmlPath = try Self.absolute(htmlArgument)
        }
        guard Paths.exists("/dev/fuse") else {
            throw .failure("run: /dev/fuse is missing, so nothing can be mounted (load the fuse module)")
        }
    }

    private static func absolute(_ path: String) throws(CommandExit) -> String {
        if path.hasPrefix("/") { return path }
        do throws(Errno) {
            return try Paths.workingDirectory() + "/" + path
        } catch {
            throw .failure("run: cannot resolve \(path): \(error)")
        }
    }

    func run(_ context: CommandContext) throws(CommandExit) {
        if let explore { return try explore.run(context) }
        do throws(Errno) {
            try TerminationRequests.install()
        } catch {
            throw .failure("run: cannot catch SIGINT and SIGTERM: \(error)")
        }
        defer { TerminationRequests.restoreDefaults() }
        let job = RunJob(container: container, options: options, scenario: scenario, scenarioFile: scenarioArgument ?? "",
                         scratch: scratch, restartAfterCrash: restartAfterCrash,
                         sampled: json || reportPath != nil || htmlPath != nil, command: command)
        let summary = try job.run()

        let report = summary.json.pretty + "\n"
        printSummary(json ? report : summary.text + "\n")
        if let reportPath {
            do throws(Errno) {
                try Self.write(report, to: reportPath)
            } catch {
                throw .failure("run: cannot write the report \(reportPath): \(error)")
            }
        }
        if let htmlPath {
            do throws(Errno) {
                try TimelinePage(summary.json).page.write(to: htmlPath)
            } catch {
                throw .failure("run: cannot write the page \(htmlPath): \(error)")
            }
        }
        if let failure = summary.failure { throw .failure(failure) }
        guard let status = summary.commandStatus else { throw .failure("run: the command's end could not be told") }
        throw .passOn(status)
    }

    private func printSummary(_ text: String) {
        try? FileDescriptor.standardError.writeAll(text)
    }

    private static func write(_ text: String, to path: String) throws(Errno) {
        let file = try FileDescriptor.open(path: path, flags: O_WRONLY | O_CREAT | O_TRUNC, mode: 0o644)
        defer { file.closeQuietly() }
        try file.writeAll(text)
    }
}
