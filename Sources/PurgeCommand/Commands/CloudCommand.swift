import PurgeCore
import PurgeEngines
import PurgeSys

/// `purgefs cloud offline|online MOUNTPOINT`, `purgefs cloud touch
/// MOUNTPOINT PATH`: the network as a mount's cloud tier sees it, through the
/// root's `user.purgefs.cloud` attribute.
struct CloudCommand: Subcommand {
    static let name = "cloud"
    static let abstract = "Take a mount's cloud tier offline or online, or change a document as another device would"
    /// `cloud offline`, `cloud online`, `cloud touch`.
    static var children: ChildCommands<Action> { ChildCommands([CloudOfflineCommand.self, CloudOnlineCommand.self, CloudTouchCommand.self]) }
    static var help: String {
        """
        \(children.usage)

        \(TextLayout.paragraph(
            "For app tests on a purgefs mount with cloud=. offline: every call of the cloud tier to its remote "
            + "fails at once, as when the network is down: uploads stay queued, opening an evicted document fails "
            + "with EIO at once (the purge log says download-failed, offline), download_status answers from what "
            + "is known. online: the calls go through again, and every queued upload starts at once. touch: the "
            + "remote copy of the document PATH (in the mount, or relative to the container) is replaced as "
            + "another device saving it would, so this mount reads user.purgefs.download_status downloaded and "
            + "the next download brings that version; it works offline too (the other device is not). Only the "
            + "mount's owner or root may use it. The same as setfattr -n user.purgefs.cloud -v offline|online|"
            + "'touch PATH' MOUNTPOINT. Fault rules on the cloud's own calls: purgefs fault --help."))

        Flags:
        \(flags.rows)
        """
    }
    /// No flags but `--help`, for the parent and each child: the children
    /// take paths only, and an unknown flag anywhere is the parent's error.
    static let flags = FlagTable<Self>(name, [])

    enum Action: Equatable {
        case offline, online
        case touch(String)
    }

    var pathArgument = ""
    var action = Action.online
    var access = AttributeAccess.live
    private(set) var root = ""
    private(set) var document = ""

    /// `cloud CHILD MOUNTPOINT [PATH]`: the child reads the paths after its word.
    init(parsing arguments: [String]) throws(CommandExit) {
        try Self.children.throwHelpIfAsked(arguments, parentHelp: Self.help)
        let parsed = try Self.flags.read(arguments, help: Self.help, into: &self)
        guard let verb = parsed.paths.first else { throw .usage("cloud: say \(Self.children.names) (see purgefs cloud --help)") }
        guard let child = Self.children.child(named: verb) else {
            throw .usage("cloud: unknown action '\(verb)' (\(Self.children.names))")
        }
        let rest = Array(parsed.paths.dropFirst())
        action = try child.init(parsing: rest).action
        pathArgument = rest[0]
    }

    mutating func validate() throws(CommandExit) {
        root = try MountLocation.mountPoint(pathArgument).path
        if case .touch(let path) = action {
            // A path through the mount, or one relative to the container.
            let prefix = root == "/" ? "/" : root + "/"
            if path.hasPrefix("/") {
                guard path.hasPrefix(prefix) else { throw .usage("cloud touch: \(path) is not inside the mount \(root)") }
                document = String(path.dropFirst(prefix.count))
            } else {
                document = path
            }
            do throws(RelativePathProblem) { document = try RelativePath.normalise(document) } catch {
                throw .usage("cloud touch: \(path): \(error)")
            }
        }
    }

    func run(_ context: CommandContext) throws(CommandExit) {
        let refusal = "\(root) has no cloud tier (mount it with -o cloud=DIR or cloud=rclone:REMOTE:PATH)"
        switch action {
        case .offline:
            try access.set(.cloud, of: root, to: "offline", refusal: refusal)
            print("The cloud tier of \(root) is offline: every remote call fails at once until purgefs cloud online.")
        case .online:
            try access.set(.cloud, of: root, to: "online", refusal: refusal)
            print("The cloud tier of \(root) is online; queued uploads start now.")
        case .touch:
            do throws(Errno) {
                try access.write(PurgeAttribute.cloud.fullName, root, Array("touch \(document)".utf8))
            } catch {
                switch error {
                case .invalidArgument: throw .failure("\(document) is not a document of a ubiquitous zone, or \(refusal)")
                case .noEntry: throw .failure("\(document) has no remote copy (not uploaded yet?)")
                case .notPermitted, .accessDenied: throw .failure("only the mount's owner or root may touch documents on \(root)")
                default: throw .failure("cannot replace the remote copy of \(document): \(error) (see purgefs log \(root) --daemon)")
                }
            }
            print("Replaced the remote copy of \(document) as another device would: its download_status is downloaded.")
        }
    }
}
