/// How a command finds the daemon serving a mount, and through it the
/// mount's state directory, which an in-place mount covers: the daemon
/// writes one small file per mount, named by the mount's ID in
/// `/proc/self/mountinfo`, in a runtime directory, and removes it at unmount.
/// The command opens the state directory as `/proc/PID/fd/STATE`.
public struct RuntimeRecord: Equatable, Sendable {
    /// The serving daemon.
    public var processID: Int32
    /// The daemon's descriptor of the state directory.
    public var stateDescriptor: Int32
    /// The container's path.
    public var container: String

    public init(processID: Int32, stateDescriptor: Int32, container: String) {
        self.processID = processID
        self.stateDescriptor = stateDescriptor
        self.container = container
    }

    /// `/run/purgefs` for root; `$XDG_RUNTIME_DIR/purgefs` (or
    /// `/tmp/purgefs-UID`) for other users, who cannot write to /run.
    public static func directory(user: UInt32, runtimeDirectory: String?) -> String {
        if user == 0 { return "/run/purgefs" }
        if let runtimeDirectory, runtimeDirectory.hasPrefix("/") { return runtimeDirectory + "/purgefs" }
        return "/tmp/purgefs-\(user)"
    }

    /// The record's file name for the mount with this mountinfo ID.
    public static func fileName(mountID: Int) -> String { "mount-\(mountID)" }

    /// `pid N\nstate FD\ncontainer PATH\n`
    public var encoded: [UInt8] {
        Array("pid \(processID)\nstate \(stateDescriptor)\ncontainer \(container)\n".utf8)
    }

    public init?(decoding data: [UInt8]) {
        var fields: [Substring: Substring] = [:]
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            guard let space = line.firstIndex(of: " ") else { return nil }
            fields[line[..<space]] = line[line.index(after: space)...]
        }
        guard let pid = fields["pid"].flatMap({ Int32($0) }), let state = fields["state"].flatMap({ Int32($0) }),
              let container = fields["container"]
        else { return nil }
        self.init(processID: pid, stateDescriptor: state, container: String(container))
    }

    /// The path through which the daemon's state directory is reached.
    public var stateDirectoryPath: String { "/proc/\(processID)/fd/\(stateDescriptor)" }
}
