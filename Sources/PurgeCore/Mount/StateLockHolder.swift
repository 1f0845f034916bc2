/// Who holds a state directory: what the daemon writes into `daemon.lock`
/// in its state directory once it has locked it, so that a mount refused
/// because of that lock can name the mount that holds it, and a command
/// given a state directory can tell which container it belongs to.
///
/// The lock itself (an exclusive `flock` on that file, held for the
/// daemon's whole life) says whether the holder is alive; the text only
/// says who it is, or was.
public struct StateLockHolder: Equatable, Sendable {
    /// The lock file's name in the state directory.
    public static let fileName = "daemon.lock"

    public var processID: Int32
    /// The container's canonical path.
    public var container: String
    /// Where the holder mounts (or mounted) it; equal to `container` in place.
    public var mountpoint: String

    public init(processID: Int32, container: String, mountpoint: String) {
        self.processID = processID
        self.container = container
        self.mountpoint = mountpoint
    }

    /// `pid N\ncontainer PATH\nmountpoint PATH\n`.
    public var encoded: [UInt8] {
        Array("pid \(processID)\ncontainer \(container)\nmountpoint \(mountpoint)\n".utf8)
    }

    /// Nil for anything else, an empty file (a holder that has not written
    /// yet) included.
    public init?(decoding data: [UInt8]) {
        var fields: [Substring: Substring] = [:]
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            guard let space = line.firstIndex(of: " ") else { return nil }
            fields[line[..<space]] = line[line.index(after: space)...]
        }
        guard let pid = fields["pid"].flatMap({ Int32($0) }), let container = fields["container"],
              let mountpoint = fields["mountpoint"]
        else { return nil }
        self.init(processID: pid, container: String(container), mountpoint: String(mountpoint))
    }

    /// The one line a mount refused because of this holder shows: the same
    /// container mounted again, or another container given its `state=`.
    public func refusal(container requested: String, stateDirectory: String) -> String {
        if requested == container {
            return "container \(container) is already mounted at \(mountpoint) (pid \(processID)): "
                + "one daemon per container (purgefs unmount \(mountpoint) first)"
        }
        return "state directory \(stateDirectory) is in use by the mount of \(container) at \(mountpoint) "
            + "(pid \(processID)): give this container a state= of its own"
    }
}
