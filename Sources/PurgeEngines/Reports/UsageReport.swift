import PurgeCore

/// The Settings > Storage breakdown of a directory on a purgefs mount (its
/// root, or a subtree): the figures, and how `usage` shows them.
public struct UsageReport: Equatable {
    /// A purgeable zone and its figures.
    public struct Zone: Equatable {
        /// Relative to the container.
        public var path: String
        public var size: UInt64
        public var purgeable: UInt64
    }

    /// The directory, canonical.
    public var path: String
    public var mountpoint: String
    /// The app's bytes (`-o bundle=`); `nil` while the daemon does not say.
    public var app: UInt64?
    /// The `Documents` part of the directory.
    public var documents: UInt64
    /// The purgeable zones in the directory, or the one it is in.
    public var zones: [Zone]
    /// The directory's own recursive figures.
    public var directory: DirectoryFigures
    public var device: DeviceFigures
    /// Bytes in the ubiquitous zone (Documents) that evicting could drop now
    /// (`user.purgefs.evictable` = `1`): 0 without `cloud=`.
    public var cloudEvictable: UInt64 = 0
    /// Files of the whole mount that share data through purgefs (the root's
    /// `user.purgefs.not_flat`): 0 when the mount does not answer it.
    public var notFlat: UInt64 = 0
    /// The directory's `user.purgefs.excluded_from_backup`; nil when the mount does not answer it.
    var excludedFromBackup: Bool? = nil

    /// The categories' places in the container, relative to its root.
    static let documentsPath = "Documents"
    /// SPEC's default purgeable zones.
    static let zonePaths = ["Library/Caches", "caches", "tmp"]

    var caches: UInt64 { zones.reduce(0) { $0 + $1.size } }
    var cachesPurgeable: UInt64 { zones.reduce(0) { $0 + $1.purgeable } }
    /// What is in none of the categories.
    public var otherData: UInt64 { directory.size.clampedMinus(documents).clampedMinus(caches).clampedMinus(app ?? 0) }

    /// Where a category at `category` (relative to the root) lies compared with
    /// the directory at `relative`: inside it (read the category), around it
    /// (the whole directory belongs to it), or apart.
    enum Overlap: Equatable {
        case inside, around, apart
    }

    static func overlap(of category: String, with relative: String) -> Overlap {
        if AbsolutePath.relative("/" + category, to: "/" + relative) != nil { return .inside }
        if AbsolutePath.relative("/" + relative, to: "/" + category) != nil { return .around }
        return .apart
    }

    // MARK: Text

    static let glyphs: (app: Character, documents: Character, caches: Character, other: Character, rest: Character,
                        available: Character) = ("#", "█", "▓", "▒", "░", "·")

    var bar: StorageBar {
        let appSegment: [StorageBar.Segment] = app.map { [.init(glyph: Self.glyphs.app, label: "App", bytes: $0)] } ?? []
        return StorageBar(segments: appSegment + [
            .init(glyph: Self.glyphs.documents, label: "Documents", bytes: documents),
            .init(glyph: Self.glyphs.caches, label: "Caches & tmp", bytes: caches),
            .init(glyph: Self.glyphs.other, label: "Other data", bytes: otherData),
            .init(glyph: Self.glyphs.rest, label: "Everything else in use", bytes: device.deviceUsed.clampedMinus(directory.allocated)),
            .init(glyph: Self.glyphs.available, label: "Available", bytes: device.available),
        ], width: StorageBar.defaultWidth)
    }

    public var text: String {
        var lines: [String] = []
        lines.append(path == mountpoint ? "Storage of \(path)" : "Storage of \(path) (in the purgefs mount at \(mountpoint))")
        lines.append("")
        lines.append(bar.bar)
        lines += bar.legend()
        lines.append("")
        var rows: [(String, String)] = []
        rows.append(("App", app.map(HumanText.size) ?? "not set (no bundle= recorded for this mount)"))
        rows.append(("Documents", HumanText.size(documents)))
        rows.append(("Caches & tmp", Self.sizeAndPurgeable(caches, cachesPurgeable)))
        for zone in zones { rows.append(("  " + zone.path, Self.sizeAndPurgeable(zone.size, zone.purgeable))) }
        rows.append(("Other data", HumanText.size(otherData)))
        rows.append(("Total", "\(HumanText.size(directory.size)) in \(HumanText.count(directory.files, "file")), "
                     + "\(HumanText.size(directory.allocated)) on disk"))
        rows.append(("Clone savings", HumanText.size(directory.cloneSavings)))
        if notFlat > 0 {
            // The whole mount's, for a subtree too; within 80 columns.
            rows.append(("Not flat", "\(HumanText.count(notFlat, "file")) share data through purgefs (purgefs flatten)"))
        }
        if let excludedFromBackup { rows.append(("Backup", excludedFromBackup ? "excluded (excluded_from_backup)" : "included")) }
        lines += Self.table(rows)
        lines.append("")
        lines.append("Device")
        lines += Self.table([
            ("Capacity", HumanText.size(device.capacity)),
            ("Used by the container", HumanText.size(device.containerUsed)),
            ("Used on the device", HumanText.size(device.deviceUsed)),
            ("Available", HumanText.size(device.available)),
            ("Available for important use", HumanText.size(device.availableImportant)),
        ])
        return lines.joined(separator: "\n")
    }

    private static func sizeAndPurgeable(_ size: UInt64, _ purgeable: UInt64) -> String {
        "\(HumanText.size(size)) (\(HumanText.size(purgeable)) purgeable)"
    }

    /// Two columns, the names padded to the longest.
    private static func table(_ rows: [(String, String)]) -> [String] {
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { "  " + HumanText.left($0.0, width) + "  " + $0.1 }
    }

    // MARK: JSON

    /// Every figure in bytes; the names are listed in `purgefs usage --help`.
    public var json: JSONValue {
        .object([
            ("path", .string(path)),
            ("mountpoint", .string(mountpoint)),
            ("app", app.map(JSONValue.integer) ?? .null),
            ("documents", .integer(documents)),
            ("caches", .integer(caches)),
            ("caches_purgeable", .integer(cachesPurgeable)),
            ("zones", .array(zones.map {
                .object([("path", .string($0.path)), ("size", .integer($0.size)), ("purgeable", .integer($0.purgeable))])
            })),
            ("other_data", .integer(otherData)),
            ("size", .integer(directory.size)),
            ("files", .integer(directory.files)),
            ("allocated", .integer(directory.allocated)),
            ("purgeable", .integer(directory.purgeable)),
            ("clone_savings", .integer(directory.cloneSavings)),
            ("cloud_evictable", .integer(cloudEvictable)),
            ("not_flat", .integer(notFlat)),
            ("excluded_from_backup", excludedFromBackup.map(JSONValue.bool) ?? .null),
            ("device", .object([
                ("capacity", .integer(device.capacity)),
                ("external", .integer(device.external)),
                ("container_used", .integer(device.containerUsed)),
                ("device_used", .integer(device.deviceUsed)),
                ("available", .integer(device.available)),
                ("available_important", .integer(device.availableImportant)),
                ("available_opportunistic", .integer(device.availableOpportunistic)),
                ("purgeable", .integer(device.purgeable)),
                ("purged_bytes", .integer(device.purgedBytes)),
                ("purged_files", .integer(device.purgedFiles)),
            ])),
        ])
    }
}

extension UsageReport {
    /// Reads back what `json` wrote (a report's `usage_start`, say); `nil`
    /// when a figure is missing.
    public init?(json: JSONValue) {
        func number(_ value: JSONValue?, _ key: String) -> UInt64? { value?[key]?.integerValue }
        guard let path = json["path"]?.stringValue, let mountpoint = json["mountpoint"]?.stringValue,
              let documents = number(json, "documents"), let size = number(json, "size"), let files = number(json, "files"),
              let allocated = number(json, "allocated"), let purgeable = number(json, "purgeable"),
              let cloneSavings = number(json, "clone_savings"), let device = json["device"],
              let capacity = number(device, "capacity"), let external = number(device, "external"),
              let containerUsed = number(device, "container_used"), let deviceUsed = number(device, "device_used"),
              let available = number(device, "available")
        else { return nil }
        let zones = (json["zones"]?.arrayValue ?? []).compactMap { zone -> Zone? in
            guard let path = zone["path"]?.stringValue, let size = number(zone, "size"), let purgeable = number(zone, "purgeable")
            else { return nil }
            return Zone(path: path, size: size, purgeable: purgeable)
        }
        self.init(path: path, mountpoint: mountpoint, app: json["app"]?.integerValue, documents: documents, zones: zones,
                  directory: DirectoryFigures(size: size, files: files, allocated: allocated, purgeable: purgeable,
                                              cloneSavings: cloneSavings),
                  device: DeviceFigures(capacity: capacity, external: external, containerUsed: containerUsed,
                                        deviceUsed: deviceUsed, available: available,
                                        availableImportant: number(device, "available_important") ?? 0,
                                        availableOpportunistic: number(device, "available_opportunistic") ?? 0,
                                        purgeable: number(device, "purgeable") ?? purgeable,
                                        purgedBytes: number(device, "purged_bytes") ?? 0,
                                        purgedFiles: number(device, "purged_files") ?? 0),
                  cloudEvictable: number(json, "cloud_evictable") ?? 0, notFlat: number(json, "not_flat") ?? 0)
    }
}
