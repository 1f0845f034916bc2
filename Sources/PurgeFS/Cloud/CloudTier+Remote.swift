import CLinux
import Glibc
import PurgeCore
import PurgeSys

/// Documents another device uploads while this container is mounted: every
/// few seconds the remote is listed, and a document this container has
/// never had (no record, no local file) appears as an evicted placeholder,
/// made as if through the mount (counted, and the kernel told).
extension CloudTier {
    /// How often the remote is listed: `PURGEFS_REMOTE_POLL` seconds in the
    /// daemon's environment, 10 by default.
    static let remotePollSeconds: Int = {
        guard let text = CurrentProcess.environmentValue("PURGEFS_REMOTE_POLL"),
              let seconds = Int(text), seconds > 0 else { return 10 }
        return seconds
    }()

    func adoptRemoteAdditions() {
        guard let mounted, let listing = try? remote.list() else { return }
        // A remote copy this container deleted or renamed, the remote not
        // told yet, stays gone; a local file not uploaded yet stays as it is.
        func isNew(_ path: String) -> Bool {
            withBooks { books in
                books.manifest.records[path] == nil && books.pending[path] == nil && !books.manifest.intents.affect(path)
            }
        }
        for (path, status) in listing where CloudZones.contains(zones, path) && isNew(path) {
            do {
                guard let placeholder = try mounted.makePlaceholder(path, like: status, ifStill: { isNew(path) })
                else { continue }
                withBooks { books in
                    books.paths[EntryID(placeholder)] = path
                    books.manifest.records[path] = CloudRecord(signature: CloudSignature(placeholder), evicted: true, remote: status)
                    save(books.manifest)
                }
            } catch {
                Diagnostics.note("cannot show remote document \(path): \(error)")
            }
        }
    }
}

extension CloudMount {
    /// Makes `path` (relative to the container) an evicted placeholder of a
    /// remote file, and the directories above it, each under its parent's
    /// namespace lock, counted and told to the kernel like a create. Nil
    /// when the name exists already (a local file wins), or when `ifStill`,
    /// asked under the lock of the file's directory, says no.
    func makePlaceholder(_ path: String, like remote: stat, ifStill wanted: () -> Bool) throws(Errno) -> stat? {
        let components = path.split(separator: "/").map { Array(String($0).utf8CString) }
        guard let last = components.last else { throw Errno.invalidArgument }
        var directory = try root.duplicate()
        defer { directory.closeQuietly() }
        var directoryID = rootKey
        for component in components.dropLast() {
            let next = try locks.withLocks(directoryID) { () throws(Errno) -> FileDescriptor in
                do throws(Errno) {
                    return try FileDescriptor.open(component, in: directory, flags: OpenFlags.path | O_DIRECTORY | O_NOFOLLOW)
                } catch where error == .noEntry {
                    try directory.makeDirectory(component, mode: 0o755)
                    let made = try FileDescriptor.open(component, in: directory, flags: OpenFlags.path | O_DIRECTORY | O_NOFOLLOW)
                    noteMadeBehindTheKernel(try made.status(), name: component, in: directoryID)
                    return made
                }
            }
            directory.closeQuietly()
            directory = next
            directoryID = EntryID(try directory.status())
        }
        return try locks.withLocks(directoryID) { () throws(Errno) -> stat? in
            guard wanted() else { return nil }
            let unnamed: FileDescriptor
            do throws(Errno) {
                unnamed = try FileDescriptor.open(".", in: directory, flags: clinux_O_TMPFILE | O_WRONLY, mode: remote.st_mode & 0o7777)
            } catch where error == .notSupported || error == .isDirectory {
                return try makeNamedPlaceholder(last, in: directory, directoryID: directoryID, like: remote)
            }
            defer { unnamed.closeQuietly() }
            return try linkPlaceholder(unnamed, as: last, in: directory, directoryID: directoryID, like: remote)
        }
    }

    /// A placeholder is counted before it has a name: lookups take no
    /// namespace lock, so a name that appeared first could be opened (and
    /// read as a hole, no download) or asked for its figures (`ENODATA`)
    /// before the ledger and the tier knew it. Made unnamed (`O_TMPFILE`),
    /// announced, then linked; a name taken meanwhile undoes the announcement.
    private func linkPlaceholder(
        _ file: FileDescriptor, as name: [CChar], in directory: FileDescriptor, directoryID: EntryID, like remote: stat
    ) throws(Errno) -> stat? {
        var status = try CloudLocal.makePlaceholder(file, like: remote)
        status.st_nlink = 1
        name.withUnsafeBufferPointer { events.created(status, id: EntryID(status), name: $0.baseAddress!, in: directoryID) }
        do throws(Errno) {
            try name.withUnsafeBufferPointer { (buffer) throws(Errno) in try file.link(as: buffer.baseAddress!, in: directory) }
        } catch {
            name.withUnsafeBufferPointer { events.removed(status, id: EntryID(status), name: $0.baseAddress!, from: directoryID) }
            if error == .exists { return nil }
            throw error
        }
        if let node = kernelNode(directoryID) { notifier.send(.deleted(parent: node, child: nil, name: name)) }
        return status
    }

    /// Where the backing filesystem has no `O_TMPFILE`: made under its name,
    /// then announced (the window above stays open there).
    private func makeNamedPlaceholder(
        _ name: [CChar], in directory: FileDescriptor, directoryID: EntryID, like remote: stat
    ) throws(Errno) -> stat? {
        let file: FileDescriptor
        do throws(Errno) {
            file = try FileDescriptor.open(name, in: directory, flags: O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW,
                                           mode: remote.st_mode & 0o7777)
        } catch where error == .exists {
            return nil
        }
        defer { file.closeQuietly() }
        let status = try CloudLocal.makePlaceholder(file, like: remote)
        noteMadeBehindTheKernel(status, name: name, in: directoryID)
        return status
    }

    /// Announces an entry purgefs made itself (`created`, as a handler
    /// would), and drops any name the kernel cached as absent.
    private func noteMadeBehindTheKernel(_ status: stat, name: [CChar], in parent: EntryID) {
        name.withUnsafeBufferPointer { events.created(status, id: EntryID(status), name: $0.baseAddress!, in: parent) }
        if let node = kernelNode(parent) { notifier.send(.deleted(parent: node, child: nil, name: name)) }
    }
}
