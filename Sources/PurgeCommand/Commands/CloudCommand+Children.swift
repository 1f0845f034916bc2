import PurgeEngines

/// `purgefs cloud offline MOUNTPOINT`.
struct CloudOfflineCommand: ChildCommand {
    static let name = "offline"
    static let usage = "purgefs cloud offline MOUNTPOINT"
    static var help: String {
        CloudCommand.childHelp(usage, "Takes the cloud tier of the purgefs mount at MOUNTPOINT offline: every call to its "
            + "remote fails at once, as when the network is down, until purgefs cloud online. The same as setfattr -n "
            + "user.purgefs.cloud -v offline MOUNTPOINT.")
    }
    let action = CloudCommand.Action.offline

    init(parsing arguments: [String]) throws(CommandExit) { try CloudCommand.requireMountpoint(arguments, Self.name) }
}

/// `purgefs cloud online MOUNTPOINT`.
struct CloudOnlineCommand: ChildCommand {
    static let name = "online"
    static let usage = "purgefs cloud online MOUNTPOINT"
    static var help: String {
        CloudCommand.childHelp(usage, "Brings the cloud tier of the purgefs mount at MOUNTPOINT online again: its calls "
            + "go through, and every queued upload starts at once. The same as setfattr -n user.purgefs.cloud -v online "
            + "MOUNTPOINT.")
    }
    let action = CloudCommand.Action.online

    init(parsing arguments: [String]) throws(CommandExit) { try CloudCommand.requireMountpoint(arguments, Self.name) }
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

    /// `offline` and `online` take MOUNTPOINT alone.
    static func requireMountpoint(_ arguments: [String], _ child: String) throws(CommandExit) {
        guard arguments.count == 1 else { throw .usage("cloud \(child): give MOUNTPOINT (see purgefs cloud --help)") }
    }
}
