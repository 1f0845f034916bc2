import PurgeCore
import PurgeEngines
import PurgeSys

/// `purgefs space MOUNTPOINT [--capacity SIZE] [--external SIZE | --available SIZE] [--json]`:
/// shows the device a mount sees, and changes the simulated one.
struct SpaceCommand: Subcommand {
    static let name = "space"
    static let abstract = "Show the device's space, or change the simulated device"
    static let help = """
        Usage: purgefs space MOUNTPOINT [--capacity SIZE] [--external SIZE] [--json]
               purgefs space MOUNTPOINT --available SIZE [--json]

        \(TextLayout.paragraph(
            "Shows the space of the device the purgefs mount at MOUNTPOINT sees, from the attributes of its root. "
            + "With --capacity or --external, first changes the simulated device (a mount without capacity= "
            + "becomes simulated once a capacity is set): df on the mount shows it at once, and the space "
            + "monitor purges within a second if available space falls below the low mark. Only the mount's "
            + "owner or root may change it."))

        Flags:
        \(flags.rows)

        \(TextLayout.paragraph("SIZE: bytes, or a number with K, M, G or T (powers of 1024), as in 512M or 1.5G."))

        Figures (JSON field names in brackets):
        \(TextLayout.row("capacity", "device size; df shows it as the size [capacity]"))
        \(TextLayout.row("external", "simulated use outside the container [external]"))
        \(TextLayout.row("used by the container", paragraphs: ["the container's bytes on disk, clone-shared data once, evicted documents none, files deleted while still open included [container_used]"]))
        \(TextLayout.row("used on the device", paragraphs: ["capacity - free: everything in use on the device, external included (on a real device also the backing filesystem's other files); df shows it as Used [device_used]"]))
        \(TextLayout.row("available", "what can still be written; df shows it as Avail [available]"))
        \(TextLayout.row("for important usage", "available + purgeable: what a write that matters can get [available_important]"))
        \(TextLayout.row("for opportunistic usage", "available - low mark, not below 0 [available_opportunistic]"))
        \(TextLayout.row("purgeable", "bytes purging could free [purgeable]"))
        \(TextLayout.row("purged", "bytes and files purged since the container was created [purged_bytes, purged_files]"))
        """

    static let flags = FlagTable<Self>(name, [
        // Read as the mount options and setfattr read them (CapacityModel's rule).
        .value("--capacity", "SIZE", \.capacity, "set the simulated device size (more than 0)") { value throws(CommandExit) in
            ByteSize(bytes: try value.read(CapacityModel.capacity(parsing:)))
        },
        .value("--external", "SIZE", \.external, "set the simulated space used outside the container (other apps)") {
            value throws(CommandExit) in ByteSize(bytes: try value.read(CapacityModel.external(parsing:)))
        },
        .value("--available", "SIZE", \.available,
               "squeeze (or relieve) the device: set external so that SIZE is available now (external + available - SIZE); "
                   + "refused when even external 0 leaves less") { value throws(CommandExit) in try value.size() },
        .switch("--json", \.json, "print the figures as one JSON object, in bytes"),
    ])

    var pathArgument = ""
    var capacity: ByteSize?
    var external: ByteSize?
    /// `--available`: the external usage is computed at run time to leave this much available.
    var available: ByteSize?
    var json = false
    var access = AttributeAccess.live
    private(set) var root = ""
    /// The mount at `root`, for its runtime record (the marks the daemon checks changes against).
    private(set) var mount: MountTable.Entry?

    init(parsing arguments: [String]) throws(CommandExit) {
        let parsed = try Self.flags.parse(arguments, help: Self.help, into: &self)
        pathArgument = try parsed.onePath("MOUNTPOINT", command: Self.name)
        try Self.flags.apply(parsed, to: &self)
        if available != nil && (external != nil || capacity != nil) {
            throw .usage("space: --available sets external itself; give it alone, without --external or --capacity")
        }
    }

    mutating func validate() throws(CommandExit) {
        let location = try MountLocation.mountPoint(pathArgument)
        root = location.path
        mount = location.mount
    }

    func run(_ context: CommandContext) throws(CommandExit) {
        var external = self.external
        if let available {
            // A = C - E - U (or the real device's free space - E): moving E by the difference leaves `available`.
            let now = (available: try access.number(.available, of: root), external: try access.number(.external, of: root))
            let most = now.external.addingClamped(now.available)
            guard most >= available.bytes else {
                throw .failure("space: cannot leave \(available) available on \(root): at most "
                    + "\(ByteSize(bytes: most)) is, with external 0")
            }
            external = ByteSize(bytes: most - available.bytes)
        }
        if capacity != nil || external != nil {
            let current = (capacity: try access.number(.capacity, of: root), external: try access.number(.external, of: root))
            let steps = Self.order(capacity: capacity, external: external, current: current)
            // The marks the daemon checks a change against (they are the mount's for its life).
            let record = mount.flatMap { try? RuntimeRecordLocator.record(of: $0, at: root) }
            try Self.check(steps, current: current, low: record?.low, high: record?.high)
            for (attribute, size) in steps {
                try access.set(attribute, of: root, to: String(size.bytes),
                               refusal: "\(root) refused \(attribute.fullName)=\(size.bytes) (the reason is in its daemon log)")
            }
        }
        let figures = try DeviceFigures.read(root: root, access)
        let changes = (capacity.map { ["capacity \($0)"] } ?? []) + (external.map { ["external \($0)"] } ?? [])
        print(json ? Self.json(figures, mountpoint: root).pretty : Self.text(figures, mountpoint: root, changed: changes))
    }

    /// The changes in the order that keeps the monitor from purging for a
    /// state in between: first what leaves more space available (a larger
    /// capacity, a smaller external), then what leaves less.
    static func order(capacity: ByteSize?, external: ByteSize?, current: (capacity: UInt64, external: UInt64))
        -> [(PurgeAttribute, ByteSize)] {
        var changes: [(PurgeAttribute, ByteSize)] = []
        if let capacity { changes.append((.capacity, capacity)) }
        if let external { changes.append((.external, external)) }
        func raisesAvailable(_ change: (PurgeAttribute, ByteSize)) -> Bool {
            change.0 == .capacity ? change.1.bytes >= current.capacity : change.1.bytes <= current.external
        }
        return changes.filter(raisesAvailable) + changes.filter { !raisesAvailable($0) }
    }

    /// Checks the device after each step with the rule the daemon and the
    /// mount options follow (`CapacityModel.validate`), so a change refused
    /// there is refused here, before anything is set, with the same line.
    /// Without the marks (`nil`), only `external` is checked.
    static func check(_ steps: [(PurgeAttribute, ByteSize)], current: (capacity: UInt64, external: UInt64),
                      low: SpaceThreshold?, high: SpaceThreshold?) throws(CommandExit) {
        var model = CapacityModel(capacity: current.capacity, external: current.external,
                                  low: low ?? .bytes(0), high: high ?? .bytes(.max))
        for (attribute, size) in steps {
            if attribute == .capacity { model.capacity = size.bytes } else { model.external = size.bytes }
            do throws(OptionError) {
                try model.validate(deviceSize: nil)
            } catch {
                throw .usage(error.description)
            }
        }
    }

    static func text(_ figures: DeviceFigures, mountpoint: String, changed: [String] = []) -> String {
        var lines: [String] = []
        if !changed.isEmpty { lines.append("Set " + changed.joined(separator: " and ") + ".") }
        lines.append("Space of \(mountpoint):")
        let rows: [(name: String, bytes: UInt64, note: String)] = [
            ("capacity", figures.capacity, ""),
            ("external", figures.external, ""),
            ("used by the container", figures.containerUsed, ""),
            ("used on the device", figures.deviceUsed, ""),
            ("available", figures.available, ""),
            ("available for important usage", figures.availableImportant, ""),
            ("available for opportunistic usage", figures.availableOpportunistic, ""),
            ("purgeable", figures.purgeable, ""),
            ("purged", figures.purgedBytes, " in " + HumanText.count(figures.purgedFiles, "file")),
        ]
        let nameWidth = rows.map(\.name.count).max() ?? 0
        let sizeWidth = rows.map { HumanText.size($0.bytes).count }.max() ?? 0
        for row in rows {
            lines.append("  " + HumanText.left(row.name, nameWidth) + "  " + HumanText.right(HumanText.size(row.bytes), sizeWidth) + row.note)
        }
        return lines.joined(separator: "\n")
    }

    static func json(_ figures: DeviceFigures, mountpoint: String) -> JSONValue {
        .object([
            ("mountpoint", .string(mountpoint)),
            ("capacity", .integer(figures.capacity)),
            ("external", .integer(figures.external)),
            ("container_used", .integer(figures.containerUsed)),
            ("device_used", .integer(figures.deviceUsed)),
            ("available", .integer(figures.available)),
            ("available_important", .integer(figures.availableImportant)),
            ("available_opportunistic", .integer(figures.availableOpportunistic)),
            ("purgeable", .integer(figures.purgeable)),
            ("purged_bytes", .integer(figures.purgedBytes)),
            ("purged_files", .integer(figures.purgedFiles)),
        ])
    }
}
