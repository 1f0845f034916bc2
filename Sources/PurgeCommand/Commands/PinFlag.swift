import PurgeCore
import PurgeSys

/// What `pin` and `unpin` share: setting `user.purgefs.pinned` on a path
/// inside a purgefs mount.
enum PinFlag {
    static func help(pin: Bool) -> String {
        let verb = pin ? "pin" : "unpin"
        let description = pin
            ? "Pins PATH, a file or directory inside a purgefs mount: purging (by the monitor, a write that "
                + "needs room, or purgefs purge) never deletes a pinned file, nor any file below a pinned "
                + "directory. The pin is kept across remounts. Sets user.purgefs.pinned to 1, like "
                + "setfattr -n user.purgefs.pinned -v 1 PATH."
            : "Unpins PATH, a file or directory inside a purgefs mount, so that its files may be purged again "
                + "(unless a directory above it is pinned too). Sets user.purgefs.pinned to 0, like "
                + "setfattr -n user.purgefs.pinned -v 0 PATH."
        return PathInMount.help(command: verb, description: description)
    }

    static func set(_ pinned: Bool, on path: String, _ access: AttributeAccess) throws(CommandExit) {
        try access.set(.pinned, of: path, to: pinned ? "1" : "0",
                       refusal: "\(path) cannot be \(pinned ? "pinned" : "unpinned"): only files and directories can")
        print(pinned ? "Pinned \(path): purging leaves it alone." : "Unpinned \(path): it may be purged again.")
    }
}
