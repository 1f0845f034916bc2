import Glibc
import PurgeCore
import PurgeSys

/// The purgeable zones: paths relative to the container, and the directory
/// each names now. A zone is a real directory reached from the root without
/// following a symlink; a path that does not exist yet becomes a zone when a
/// directory is made or moved there through the mount, and a zone directory
/// moved away stops being one.
struct ZoneSet: Sendable {
    let paths: [String]
    /// The directory each zone path names now, if any.
    private(set) var directories: [String: EntryID] = [:]

    init(paths: [String]) {
        self.paths = paths
    }

    /// Resolves the paths at mount. Returns a line for each path that exists
    /// but cannot be a zone (a symlink on the way, not a directory).
    mutating func resolve(from root: FileDescriptor) -> [String] {
        var problems: [String] = []
        for path in paths {
            do {
                let directory = try Self.open(path, from: root)
                defer { directory.closeQuietly() }
                directories[path] = EntryID(try directory.status())
            } catch where error == .noEntry {
                continue  // made later, perhaps
            } catch where error == .tooManySymlinks || error == .notDirectory {
                problems.append("purgeable zone \(path) is not a zone: a symlink or a non-directory is on its path")
            } catch {
                problems.append("purgeable zone \(path) is not a zone: \(error)")
            }
        }
        return problems
    }

    /// Brings the zone marks up to date after directory `changed` was made
    /// or moved (or, with nil, after any directory move): a zone directory
    /// whose path changed stops being a zone; a directory now at a zone
    /// path becomes one.
    mutating func update(after changed: EntryID?, in ledger: inout Ledger, names: DirectoryNames) {
        for (path, id) in directories where names.path(of: id) != path {
            directories[path] = nil
            try? ledger.setZone(id, false)
        }
        guard let changed, let path = names.path(of: changed), paths.contains(path), directories[path] == nil else { return }
        directories[path] = changed
        try? ledger.setZone(changed, true)
    }

    /// Opens a relative path one component at a time, never following a symlink.
    private static func open(_ path: String, from root: FileDescriptor) throws(Errno) -> FileDescriptor {
        var current = try root.duplicate()
        for component in path.split(separator: "/") {
            do {
                let opened = try String(component).withCString { name in
                    Result { () throws(Errno) -> FileDescriptor in
                        try FileDescriptor.open(name, in: current, flags: OpenFlags.path | O_DIRECTORY | O_NOFOLLOW)
                    }
                }.get()
                current.closeQuietly()
                current = opened
            } catch {
                current.closeQuietly()
                throw error
            }
        }
        return current
    }
}
