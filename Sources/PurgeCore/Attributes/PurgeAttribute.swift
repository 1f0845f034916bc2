/// The `user.purgefs.*` extended attributes: answered by purgefs itself,
/// never listed, never stored under these names in the backing store.
///
/// This type knows the names, where each applies and whether it can be read
/// or written; the adapter supplies the values.
public enum PurgeAttribute: String, CaseIterable, Sendable {
    // Every directory (recursive) and, where marked, every file.
    case size, files, allocated, purgeable
    case cloneSavings = "clone_savings"
    // The container root.
    case capacity, external, available
    /// Not in SPEC's table: the figures `purgefs space` and `usage` show
    /// (`SpaceStatus.containerUsed`, `deviceUsed`), one name each.
    case containerUsed = "container_used"
    case deviceUsed = "device_used"
    case availableImportant = "available_important"
    case availableOpportunistic = "available_opportunistic"
    case purgedBytes = "purged_bytes"
    case purgedFiles = "purged_files"
    /// A shared device's totals (`device=`; a device of its own otherwise):
    /// its name (text; `ENODATA` without `device=`), its containers, their
    /// usage and purgeable bytes summed, and this container's cache quota
    /// on it (0 without `device=`).
    case deviceName = "device_name"
    case deviceContainers = "device_containers"
    case deviceContainersUsed = "device_containers_used"
    case devicePurgeable = "device_purgeable"
    case deviceQuota = "device_quota"
    case purge
    /// Not in SPEC's table, for `purgefs run` and PurgeTesting (since the
    /// mount, read-only): requests answered `ENOSPC`, the highest
    /// `container_used`, and the space monitor's finished rounds.
    case enospc
    case peakUsed = "peak_used"
    case monitorRounds = "monitor_rounds"
    /// Not in SPEC's table: the fault rules (`purgefs fault`). Read: one
    /// line a rule (`FaultBook.listing`); write `add RULE`, `clear` or
    /// `clear ID` (`FaultCommand`).
    case faults
    /// With `cloud=`: the network as the cloud tier sees it. Read `online` or
    /// `offline`; write `offline`, `online`, or `touch PATH` (another device
    /// saves the document PATH again) (`purgefs cloud`).
    case cloud
    /// The power-loss simulation: read, what a crash now would undo (one
    /// line each); write `1`, crash. `last_crash`: what the last one undid.
    case crash
    case lastCrash = "last_crash"
    /// Write `1`: the daemon takes a metrics sample now (`purgefs metrics
    /// --deliver`, which then asks PurgeKit's managers to deliver today's report).
    case metricsSample = "metrics_sample"
    /// How requests reach the daemon: `io_uring QUEUESxTHREADS pinned|free`,
    /// `/dev/fuse`, or `/dev/fuse (io_uring refused: REASON)`.
    case transport
    // Files (pinned also on directories; group and tombstone on zone directories).
    case pinned, group, tombstone
    /// `1` keeps the file (or a directory's subtree) out of backups: what
    /// `URLResourceValues.isExcludedFromBackup` reads and writes. Kept like
    /// `pinned`; writable by the file's owner.
    case excludedFromBackup = "excluded_from_backup"
    case contentID = "content_id"
    case lastUsed = "last_used"
    case shared, ubiquitous, uploaded
    case downloadStatus = "download_status"
    case evictable
    case evict, download
    /// `1` when the file's backing file holds all its own data, `0` while it
    /// shares data through purgefs (a linked clone and its original); the
    /// root's `not_flat` counts the files answering `0`; writing `1` to a
    /// file's `flatten` gives it data of its own (`purgefs flatten`).
    case flat
    case notFlat = "not_flat"
    case flatten

    /// The namespace every purgefs attribute lives in.
    public static let prefix = "user.purgefs."

    /// What kind of object an attribute is asked of.
    public enum Target: Sendable {
        case root, directory, file
        /// Symlinks, fifos, sockets, devices: no purgefs attribute applies.
        case other
    }

    /// Parses a full attribute name. `nil` for names outside the namespace;
    /// `.unknown` for names inside it that purgefs does not define.
    public static func parse(_ name: String) -> Lookup {
        guard name.hasPrefix(prefix) else { return .foreign }
        guard let attribute = PurgeAttribute(rawValue: String(name.dropFirst(prefix.count))) else { return .unknown }
        return .known(attribute)
    }

    public enum Lookup: Equatable, Sendable {
        /// Not a purgefs name: the container's own attribute, passed through.
        case foreign
        /// In the purgefs namespace but not defined: `ENODATA` on read, `EINVAL` on write.
        case unknown
        case known(PurgeAttribute)
    }

    /// Whether the attribute can be read on `target`.
    public func isReadable(on target: Target) -> Bool {
        switch self {
        case .size, .allocated, .purgeable, .pinned, .excludedFromBackup:
            return target != .other
        case .files, .cloneSavings, .group, .tombstone:
            return target == .root || target == .directory
        case .capacity, .external, .available, .containerUsed, .deviceUsed, .availableImportant, .availableOpportunistic,
             .purgedBytes, .purgedFiles, .enospc, .peakUsed, .monitorRounds, .faults, .cloud, .deviceName, .deviceContainers,
             .deviceContainersUsed, .devicePurgeable, .deviceQuota, .crash, .lastCrash, .transport, .notFlat:
            return target == .root
        case .contentID, .lastUsed, .shared, .ubiquitous, .uploaded, .downloadStatus, .evictable, .flat:
            return target == .file
        case .purge, .evict, .download, .metricsSample, .flatten:
            return false
        }
    }

    /// Whether the attribute can be written on `target` (whether the value is
    /// acceptable is checked separately).
    public func isWritable(on target: Target) -> Bool {
        switch self {
        case .capacity, .external, .purge, .faults, .cloud, .crash, .metricsSample:
            return target == .root
        case .pinned, .excludedFromBackup:
            return target != .other
        case .group, .tombstone:
            return target == .root || target == .directory
        case .evict, .download, .flatten:
            return target == .file
        case .size, .files, .allocated, .purgeable, .cloneSavings, .available, .containerUsed, .deviceUsed, .availableImportant,
             .availableOpportunistic, .purgedBytes, .purgedFiles, .enospc, .peakUsed, .monitorRounds, .contentID, .lastUsed, .shared,
             .deviceName, .deviceContainers, .deviceContainersUsed, .devicePurgeable, .deviceQuota,
             .ubiquitous, .uploaded, .downloadStatus, .evictable, .lastCrash, .transport, .flat, .notFlat:
            return false
        }
    }

    /// Only the mount's owner or root may change the device, purge, set fault rules, or take the cloud offline.
    public var isControl: Bool {
        switch self {
        case .capacity, .external, .purge, .faults, .cloud, .crash: return true
        default: return false
        }
    }

    /// The full name, `user.purgefs.<name>`.
    public var fullName: String { Self.prefix + rawValue }
}

extension PurgeAttribute {
    /// Parses a flag value: `1` or `0` (a trailing newline, as `echo` leaves, is allowed).
    public static func parseFlag(_ bytes: [UInt8]) -> Bool? {
        switch trimmed(bytes) {
        case [UInt8(ascii: "1")]: return true
        case [UInt8(ascii: "0")]: return false
        default: return nil
        }
    }

    /// The value without one trailing newline or NUL.
    static func trimmed(_ bytes: [UInt8]) -> ArraySlice<UInt8> {
        var slice = bytes[...]
        if let last = slice.last, last == 0x0A || last == 0 { slice = slice.dropLast() }
        return slice
    }
}
