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
    /// The purgeable zones the mount was given (`-o purgeable=`).
    public var zones: [String]
    /// The app's part of the container (`-o bundle=`), if given.
    public var bundle: String?
    /// The purge marks the mount was given (`-o low=`, `high=`; they do not
    /// change while mounted): `purgefs space` checks a change of the device
    /// against them as the daemon does (`CapacityModel.validate`).
    public var low: SpaceThreshold?
    public var high: SpaceThreshold?

    public init(processID: Int32, stateDescriptor: Int32, container: String, zones: [String] = [], bundle: String? = nil,
                low: SpaceThreshold? = nil, high: SpaceThreshold? = nil) {
        self.processID = processID
        self.stateDescriptor = stateDescriptor
        self.container = container
        self.zones = zones
        self.bundle = bundle
        self.low = low
        self.high = high
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

    /// `pid N\nstate FD\ncontainer PATH\nzones P1:P2\n[bundle P\n][low T\n][high T\n]`
    /// (zone paths cannot hold `:`, the option's own separator; marks as
    /// `SpaceThreshold.exactText`). Readers skip lines they do not know.
    public var encoded: [UInt8] {
        var text = "pid \(processID)\nstate \(stateDescriptor)\ncontainer \(container)\nzones \(zones.joined(separator: ":"))\n"
        if let bundle { text += "bundle \(bundle)\n" }
        if let low { text += "low \(low.exactText)\n" }
        if let high { text += "high \(high.exactText)\n" }
        return Array(text.utf8)
    }

    public init?(decoding data: [UInt8]) {
        var fields: [Substring: Substring] = [:]
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            if line == "zones" { fields["zones"] = ""; continue }  // no zones
            guard let space = line.firstIndex(of: " ") else { return nil }
            fields[line[..<space]] = line[line.index(after: space)...]
        }
        guard let pid = fields["pid"].flatMap({ Int32($0) }), let state = fields["state"].flatMap({ Int32($0) }),
              let container = fields["container"]
        else { return nil }
        let zones = fields["zones"].map { $0.split(separator: ":").map(String.init) } ?? []
        func threshold(_ name: Substring) -> SpaceThreshold? { fields[name].flatMap { try? SpaceThreshold(parsing: String($0)) } }
        self.init(processID: pid, stateDescriptor: state, container: String(container), zones: zones,
                  bundle: fields["bundle"].map(String.init), low: threshold("low"), high: threshold("high"))
    }

    /// The path through which the daemon's state directory is reached.
    public var stateDirectoryPath: String { "/proc/\(processID)/fd/\(stateDescriptor)" }
}
