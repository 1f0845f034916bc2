import PurgeEngines

/// `purgefs cloud offline|online MOUNTPOINT`: one child for each state of
/// the network, which takes MOUNTPOINT alone.
struct CloudNetworkCommand<State: CloudNetworkState>: ChildCommand {
    static var name: String { State.name }
    static var usage: String { "purgefs cloud \(name) MOUNTPOINT" }
    static var help: String { CloudCommand.childHelp(usage, State.description) }
    var action: CloudCommand.Action { State.action }

    init(parsing arguments: [String]) throws(CommandExit) {
        guard arguments.count == 1 else { throw .usage("cloud \(Self.name): give MOUNTPOINT (see purgefs cloud --help)") }
    }
}

/// What one `CloudNetworkCommand` sets.
protocol CloudNetworkState {
    static var name: String { get }
    static var action: CloudCommand.Action { get }
    /// The paragraph of its `--help`.
    static var description: String { get }
}

/// `purgefs cloud offline MOUNTPOINT`.
typealias CloudOfflineCommand = CloudNetworkCommand<CloudOffline>
/// `purgefs cloud online MOUNTPOINT`.
typealias CloudOnlineCommand = CloudNetworkCommand<CloudOnline>

enum CloudOffline: CloudNetworkState {
    static let name = "offline"
    static let action = CloudCommand.Action.offline
    static let description = "Takes the cloud tier of the purgefs mount at MOUNTPOINT offline: every call to its "
        + "remote fails at once, as when the network is down, until purgefs cloud online. The same as setfattr -n "
        + "user.purgefs.cloud -v offline MOUNTPOINT."
}

enum CloudOnline: CloudNetworkState {
    static let name = "online"
    static let action = CloudCommand.Action.online
    static let description = "Brings the cloud tier of the purgefs mount at MOUNTPOINT online again: its calls go "
        + "through, and every queued upload starts at once. The same as setfattr -n user.purgefs.cloud -v online "
        + "MOUNTPOINT."
}

/// `purgefs cloud touch MOUNTPOINT PATH`.
struct CloudTouchCommand: ChildCommand {
    static let name = "touch"
    static let usage = "purgefs cloud touch MOUNTPOINT PATH"
    static var help: String {
        CloudCommand.childHelp(usage, "Replaces the remote copy of the document PATH (in the mount, or relative to the "
            + "container) as another device saving it would, so the purgefs mount at MOUNTPOINT reads "
            + "user.purgefs.download_status downloaded and the next download brings that version; it works offline too. "
            + "The same as setfattr -n user.purgefs.cloud -v 'touch PATH' MOUNTPOINT.")
    }
    let action: CloudCommand.Action

    init(parsing arguments: [String]) throws(CommandExit) {
        guard arguments.count == 2 else { throw .usage("cloud touch: give MOUNTPOINT and PATH (see purgefs cloud --help)") }
        action = .touch(arguments[1])
    }
}

extension CloudCommand {
    /// A child's help: its usage, what it does, and `--help`.
    static func childHelp(_ usage: String, _ description: String) -> String {
        """
        Usage: \(usage)

        \(TextLayout.paragraph(description + " Only the mount's owner or root may use it."))

        Flags:
        \(flags.rows)
        """
    }
}
