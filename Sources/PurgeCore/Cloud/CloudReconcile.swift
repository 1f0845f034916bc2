/// A regular file of a ubiquitous zone as the reconcile at mount finds it.
public struct CloudLocalFile: Equatable, Sendable {
    public var signature: CloudSignature
    /// It has data blocks (an evicted document is a hole and has none).
    public var allocated: Bool

    public init(signature: CloudSignature, allocated: Bool) {
        self.signature = signature
        self.allocated = allocated
    }
}

/// One thing the cloud tier does at mount (`CloudReconcile.plan`).
public enum CloudMountAction: Equatable, Sendable {
    /// The document was deleted while the container was not mounted (or the
    /// daemon was killed before it said so): its record goes and its remote
    /// copy is to be removed (an intent).
    case removeRemote(String)
    /// The document was renamed meanwhile (its inode is found under `to`):
    /// the remote copy follows (an intent); the record too when the file
    /// there still has the recorded content (`keepsRecord`), else the file
    /// is uploaded anew under `to`.
    case renameRemote(from: String, to: String, keepsRecord: Bool)
    /// An evicted document has data, or another size or time (a download
    /// cut short by `kill -9`): made a hole again, like its record.
    case restoreHole(String, like: CloudSignature)
    /// A remote document this container has never had (a new device):
    /// shown as an evicted placeholder of the remote copy.
    case placeholder(String)
    /// The remote does not hold the local content: the file is uploaded.
    case upload(String)
}

/// The cloud tier's decisions at mount, before the container is indexed:
/// what to do with each document given the manifest, what is in the zones
/// and what the remote holds. Pure: the adapter (`CloudTier+Mount`) finds,
/// asks, then carries out the actions in order.
///
/// | found | action |
/// |---|---|
/// | a record, its local file gone, its inode under no other recorded name | `removeRemote` (the remote copy may be gone too: removing nothing is fine) |
/// | a record, its local file gone, its inode under a name without a record | `renameRemote`, the record kept if that file's signature is the record's |
/// | an evicted record, its file (same inode) with data or another signature | `restoreHole` |
/// | an evicted record, another file with data under its name | `upload` (the record no longer evicted) |
/// | an evicted record, another file without data under its name | nothing |
/// | a remote document in a zone, no local file, no record | `placeholder` |
/// | a local file whose signature is not its record's (none, changed, newer) | `upload` |
/// | a local file whose signature is its record's | nothing |
///
/// The intents already in the manifest (left by a killed daemon) stay
/// first, in order: the remote is taken as it will be once every intent is
/// applied, so a document deleted or renamed here is not brought back as a
/// placeholder of its old name.
public enum CloudReconcile {
    /// The actions, in the order to carry them out, and the manifest to
    /// save before carrying them out (`CloudManifest.note` of each action).
    /// `remote` is the remote's listing (path to signature), nil when it
    /// could not be listed.
    public static func plan(
        manifest: CloudManifest, local: [String: CloudLocalFile], remote: [String: CloudSignature]?, zones: [String]
    ) -> (actions: [CloudMountAction], manifest: CloudManifest) {
        var manifest = manifest
        var actions: [CloudMountAction] = []
        func act(_ action: CloudMountAction) {
            manifest.note(action)
            actions.append(action)
        }
        // A recorded file gone locally was deleted or renamed while the remote was not told.
        // Hard links: the first of the inode's names in path order.
        var byInode: [UInt64: String] = [:]
        for (path, file) in local.sorted(by: { $0.key < $1.key }) where byInode[file.signature.inode] == nil {
            byInode[file.signature.inode] = path
        }
        for (path, record) in manifest.records.sorted(by: { $0.key < $1.key }) where local[path] == nil {
            if let moved = byInode[record.signature.inode], manifest.records[moved] == nil {
                act(.renameRemote(from: path, to: moved, keepsRecord: local[moved]?.signature == record.signature))
            } else {
                act(.removeRemote(path))
            }
        }
        var restored: Set<String> = []
        for (path, record) in manifest.records.sorted(by: { $0.key < $1.key }) where record.evicted {
            guard let file = local[path] else { continue }
            if file.signature.inode != record.signature.inode {
                // Another file with data under the name (a clone's eviction
                // killed before it left the data it shared): that data is the
                // document's, uploaded below (noting the upload ends the
                // eviction). Without data it has nothing to upload.
                if !file.allocated { restored.insert(path) }
                continue
            }
            guard file.signature != record.signature || file.allocated else { continue }
            act(.restoreHole(path, like: record.signature))
            restored.insert(path)
        }
        if let remote {
            let after = Set(remote.keys.compactMap { manifest.intents.destination(of: $0) })
            for path in after.sorted()
            where local[path] == nil && CloudZones.contains(zones, path) && manifest.records[path] == nil {
                act(.placeholder(path))
            }
        }
        // A hole made again has its record's signature; a placeholder is recorded as made.
        for (path, file) in local.sorted(by: { $0.key < $1.key })
        where !restored.contains(path) && manifest.records[path]?.signature != file.signature {
            act(.upload(path))
        }
        return (actions, manifest)
    }
}

extension CloudMountAction {
    /// The document the action is about (for a rename, its old name).
    public var path: String {
        switch self {
        case .removeRemote(let path), .restoreHole(let path, _), .placeholder(let path), .upload(let path): path
        case .renameRemote(let from, _, _): from
        }
    }
}

extension CloudManifest {
    /// Records what `action` changes in the manifest: a removed or renamed
    /// document's record goes (or moves) and its remote change is
    /// journalled; a document to upload is not evicted (its file has data:
    /// `plan` uploads no evicted document otherwise). The other actions
    /// change the manifest only once carried out (a placeholder's record is
    /// its file's signature).
    public mutating func note(_ action: CloudMountAction) {
        switch action {
        case .removeRemote(let path):
            records[path] = nil
            intents.append(.remove(path))
        case .renameRemote(let from, let to, let keepsRecord):
            let record = records.removeValue(forKey: from)
            intents.append(.rename(from, to))
            if keepsRecord, let record { records[to] = record }
        case .upload(let path):
            records[path]?.evicted = false
        case .restoreHole, .placeholder:
            break
        }
    }
}

extension Array where Element == CloudIntent {
    /// Where the remote copy now at `path` will be once these intents are
    /// applied in order; nil when one removes it.
    public func destination(of path: String) -> String? {
        var path = path
        for intent in self {
            switch intent {
            case .remove(let removed):
                if path == removed || path.hasPrefix(removed + "/") { return nil }
            case .rename(let from, let to):
                if path == from { path = to } else if path.hasPrefix(from + "/") { path = to + path.dropFirst(from.count) }
            }
        }
        return path
    }
}

extension Array where Element == CloudIntent {
    /// Whether an intent still to apply removes or renames `path` (or a
    /// directory above it): its remote copy is one this container deleted
    /// or renamed, not a new document of another device.
    public func affect(_ path: String) -> Bool {
        contains { intent in
            let affected: String
            switch intent {
            case .remove(let removed): affected = removed
            case .rename(let from, _): affected = from
            }
            return path == affected || path.hasPrefix(affected + "/")
        }
    }

    /// Whether an intent still to apply removes `path`, renames it, or
    /// renames something onto it (or onto a directory above it): an upload
    /// to `path` waits for these, which would otherwise reach the remote
    /// after it and delete the new copy or move an old one over it.
    public func touch(_ path: String) -> Bool {
        func covers(_ name: String) -> Bool { path == name || path.hasPrefix(name + "/") }
        return contains { intent in
            switch intent {
            case .remove(let removed): return covers(removed)
            case .rename(let from, let to): return covers(from) || covers(to)
            }
        }
    }
}
