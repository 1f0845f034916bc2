/// What `purgefs help attributes` and the reference say of each attribute.
/// Where an attribute applies and whether it is read or written come from
/// `isReadable`/`isWritable`, which the daemon obeys, so the table cannot
/// drift from what the daemon answers; the switches below have no
/// `default`, so a new attribute does not build until it is described.
extension PurgeAttribute {
    /// How the attribute may be used, from `isReadable` and `isWritable`.
    public enum Access: String, Sendable {
        case readOnly = "read-only"
        case readWrite = "read-write"
        case writeOnly = "write-only"
    }

    public var access: Access {
        let targets: [Target] = [.root, .directory, .file]
        let readable = targets.contains { isReadable(on: $0) }
        let writable = targets.contains { isWritable(on: $0) }
        switch (readable, writable) {
        case (true, true): return .readWrite
        case (false, true): return .writeOnly
        default: return .readOnly
        }
    }

    /// The kinds of path it applies to (read or written), in the order root, directory, file.
    public var targets: [Target] {
        [.root, .directory, .file].filter { isReadable(on: $0) || isWritable(on: $0) }
    }

    /// `root`, `directories`, `files`, joined: where the attribute applies,
    /// with the narrower conditions the daemon checks besides.
    public var placesText: String {
        var places = targets.map { target -> String in
            switch target {
            case .root: return "root"
            case .directory: return "directories"
            case .file: return "files"
            case .other: return "other"
            }
        }
        // The root is a directory: "root, directories" says "every directory".
        if places.starts(with: ["root", "directories"]) { places.removeFirst() }
        var text = places.joined(separator: ", ")
        switch self {
        case .group, .tombstone: text += " in a purgeable zone"
        case .ubiquitous, .uploaded, .downloadStatus, .evictable, .evict, .download: text += " (with cloud=)"
        case .deviceName: text += " (with device=)"
        case .crash: text += " (with crashable)"
        default: break
        }
        return text
    }

    /// Who may write it: the control attributes only the mount's owner or
    /// root (else `EPERM`); the others whoever may write the path.
    public var setterText: String? {
        if access == .readOnly { return nil }
        if isControl { return "the mount's owner or root" }
        return self == .excludedFromBackup ? "the file's owner or root" : "whoever may write the path"
    }

    /// The value's unit or form.
    public var unitText: String {
        switch self {
        case .size, .allocated, .cloneSavings, .capacity, .external, .available, .containerUsed, .deviceUsed,
             .availableImportant, .availableOpportunistic, .purgedBytes, .shared:
            return "bytes"
        case .purgeable:
            return "bytes; 0/1 on files"
        case .files, .purgedFiles, .deviceContainers, .enospc, .monitorRounds, .notFlat:
            return "count"
        case .peakUsed:
            return "bytes"
        case .crash:
            return "lines; write 1"
        case .metricsSample:
            return "1"
        case .lastCrash:
            return "lines"
        case .deviceContainersUsed, .devicePurgeable, .deviceQuota:
            return "bytes"
        case .deviceName, .transport:
            return "text"
        case .purge:
            return "SIZE or all"
        case .faults:
            return "lines; write a command"
        case .cloud:
            return "online/offline; command"
        case .pinned, .group, .tombstone, .ubiquitous, .uploaded, .excludedFromBackup, .flat:
            return "0/1"
        case .contentID:
            return "number"
        case .lastUsed:
            return "epoch seconds"
        case .downloadStatus:
            return "word"
        case .evictable:
            return "1 or a word"
        case .evict, .download, .flatten:
            return "1"
        }
    }

    /// One line: what the value is.
    public var summary: String {
        switch self {
        case .size: return "logical bytes: the file's size, or the sum of the subtree's regular files' sizes"
        case .files: return "regular files in the subtree"
        case .allocated: return "bytes stored on disk, clone-shared data counted once, evicted documents none"
        case .purgeable: return "a directory: bytes purging could free in its subtree; a file: 1 inside a purgeable zone"
        case .cloneSavings: return "bytes not stored thanks to clones"
        case .capacity: return "C, the device's size; writing it squeezes or grows the simulated device"
        case .external: return "E, simulated use outside the container (other apps)"
        case .available: return "A, what can still be written: C - E - container_used when simulated"
        case .containerUsed: return "the container's bytes on disk, files deleted while open included"
        case .deviceUsed: return "everything in use on the device: capacity - free"
        case .availableImportant: return "A + purgeable"
        case .availableOpportunistic: return "A - the low mark, not below 0"
        case .purgedBytes: return "bytes purged since the container was created"
        case .purgedFiles: return "files purged since the container was created"
        case .purge: return "write a SIZE or all: purge that much now, least recently used first"
        case .deviceName: return "the shared device's name (device=)"
        case .deviceContainers: return "containers on this container's device (1 without device=)"
        case .deviceContainersUsed: return "their bytes on disk, summed"
        case .devicePurgeable: return "what purging could free in them, summed"
        case .deviceQuota: return "this container's cache quota on a shared device (0 without device=)"
        case .enospc: return "requests answered ENOSPC since the mount"
        case .peakUsed: return "the highest container_used since the mount"
        case .monitorRounds: return "rounds the space monitor has finished since the mount (purgefs run, PurgeTesting's waitForMonitor)"
        case .crash: return "with -o crashable: what a crash now would undo, one line each; write 1: crash now (purgefs crash)"
        case .lastCrash: return "what the last crash undid, one line each"
        case .transport: return "how requests come: io_uring QUEUESxTHREADS pinned|free, /dev/fuse, or /dev/fuse (io_uring refused: REASON)"
        case .faults: return "the fault rules, one line a rule; write add RULE, clear or clear ID (purgefs fault)"
        case .cloud: return "with cloud=: online or offline; write offline, online or touch PATH (purgefs cloud)"
        case .pinned: return "1 keeps the file, or everything below the directory, from purging"
        case .excludedFromBackup: return "1 marks the file or directory as not to be backed up (isExcludedFromBackup); kept like pinned"
        case .metricsSample: return "write 1: take a metrics sample now (purgefs metrics --deliver)"
        case .group: return "1 purges the directory's files together, aged by the most recently used"
        case .tombstone: return "1 truncates purged files to 0 bytes instead of deleting them"
        case .contentID: return "equal for a clone and its original while they share content"
        case .lastUsed: return "when the file was last opened, read or written through the mount"
        case .shared: return "bytes of the file's data shared with clones"
        case .ubiquitous: return "1 inside a ubiquitous zone"
        case .uploaded: return "1 once the remote holds the file's current content"
        case .downloadStatus: return "current, downloaded or not_downloaded"
        case .evictable: return "1 if evicting would work now, evicted, or why not: not_uploaded, changed, open, shared"
        case .evict: return "write 1: drop the local data of an uploaded file (EBUSY if it cannot be)"
        case .download: return "write 1: start downloading an evicted file"
        case .flat: return "1 when the backing file holds all its own data, 0 while it shares data through purgefs (a linked clone)"
        case .notFlat: return "files whose flat is 0: they share data through purgefs (purgefs flatten makes them plain)"
        case .flatten: return "write 1: give a file that shares data through purgefs data of its own (ENOSPC if there is no room)"
        }
    }
}
