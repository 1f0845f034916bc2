import PurgeCore
import PurgeEngines
import PurgeSys

/// `purgefs demo [--keep]`: a self-contained tour on a sample container.
/// Makes a container in a fresh temporary directory, mounts it with this
/// binary on a small simulated device, shows each feature with the command
/// a user would type and its real result, unmounts and removes everything.
struct DemoCommand: Subcommand {
    static let name = "demo"
    static let abstract = "A self-contained tour on a sample container"
    static let help = """
        Usage: purgefs demo [--keep]

        \(TextLayout.paragraph(
            "Makes a sample app container (Documents, Library/Caches with cache files of various sizes and "
            + "ages, tmp, Library/Preferences) in a fresh temporary directory under $TMPDIR (else /tmp), mounts it "
            + "with this purgefs on a simulated device (\(DemoSample.mountOptions)), and shows, with the command "
            + "a user would type and its real result: the listing through the mount, df, a clone that takes no "
            + "space until it is written, the user.purgefs.* figures, purgefs usage, a manual purge, the space monitor purging once the device is squeezed, "
            + "purgefs log, and a write into Documents failing with ENOSPC once nothing purgeable is left. Then "
            + "it unmounts and removes the directory."))

        \(TextLayout.paragraph(
            "What it mounted is always unmounted, also when a step fails or on Ctrl-C (SIGINT, SIGTERM, SIGHUP, "
            + "SIGPIPE). "
            + "Needs /dev/fuse, and root or fusermount3 to mount. Exit status: 0 when the tour ran, 1 when a "
            + "step failed (one purgefs: line on stderr says which)."))

        Flags:
        \(flags.rows)
        """

    static let flags = FlagTable<Self>(name, [
        .switch("--keep", \.keep, "leave the container (not the mount) for inspection, and say where"),
    ])

    var keep = false

    init(parsing arguments: [String]) throws(CommandExit) {
        let parsed = try Self.flags.read(arguments, help: Self.help, into: &self)
        if let extra = parsed.paths.first {
            throw .usage("demo: unexpected argument '\(extra)' (see purgefs demo --help)")
        }
    }

    mutating func validate() throws(CommandExit) {
        guard Paths.exists("/dev/fuse") else {
            throw .failure("demo: /dev/fuse is missing, so nothing can be mounted (load the fuse module, "
                + "or give the container the device)")
        }
    }

    func run(_ context: CommandContext) throws(CommandExit) {
        do throws(Errno) {
            try TerminationRequests.install()
        } catch {
            throw .failure("demo: cannot catch SIGINT and SIGTERM: \(error)")
        }
        defer { TerminationRequests.restoreDefaults() }
        let transcript = DemoTranscript()
        let session = try DemoSession.create(transcript: transcript)

        var tourFailure: String?
        do throws(CommandExit) {
            try DemoTour(session: session).run()
        } catch {
            switch error {
            case .failure(let line), .usage(let line): tourFailure = line
            case .help, .passOn: break
            }
        }
        let cleanupProblem = session.tearDown(keep: keep)

        if let tourFailure {
            let kept = keep && cleanupProblem == nil ? " (the container is kept at \(session.containerPath))" : ""
            throw .failure(tourFailure + kept + (cleanupProblem.map { "; and \($0.dropFirst("demo: ".count))" } ?? ""))
        }
        if let cleanupProblem { throw .failure(cleanupProblem) }
        // Not wrapped: the paths are meant to be copied.
        if keep {
            transcript.output("\nKept the container at \(session.containerPath) for inspection (its state is in "
                + ".purgefs).\nRemove it with: rm -r \(session.base)")
        } else {
            transcript.output("\nRemoved \(session.base).")
        }
    }
}
