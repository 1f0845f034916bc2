import Glibc
import PurgeCore
import PurgeSys

/// Where each directory of the container is: its parent and its name.
///
/// The ledger keeps no names; the purger needs to reach a victim's
/// directory, so it walks these names down from the root, one component at
/// a time, with `O_NOFOLLOW` and checking that each step is the directory
/// recorded. A symlink, a bind mount or a directory renamed outside the
/// mount therefore makes the walk fail instead of leading elsewhere.
/// Guarded by the owner's lock.
struct DirectoryNames {
    private struct Place {
        var parent: EntryID
        var name: [CChar]  // NUL-terminated
    }

    private var places: [EntryID: Place] = [:]
    let root: EntryID

    init(root: EntryID) {
        self.root = root
    }

    mutating func record(_ id: EntryID, parent: EntryID, name: CName) {
        places[id] = Place(parent: parent, name: CNames.copy(name))
    }

    mutating func remove(_ id: EntryID) {
        places[id] = nil
    }

    /// The components from the root down to `id` (none for the root), or nil
    /// if some directory on the way is unknown.
    func components(of id: EntryID) -> [(id: EntryID, name: [CChar])]? {
        var chain: [(id: EntryID, name: [CChar])] = []
        var current = id
        while current != root {
            guard let place = places[current], chain.count < 4096 else { return nil }
            chain.append((current, place.name))
            current = place.parent
        }
        return chain.reversed()
    }

    /// The path of `id` relative to the container root, for the log.
    func path(of id: EntryID) -> String? {
        components(of: id).map { chain in
            chain.map { String(decoding: $0.name.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self) }
                .joined(separator: "/")
        }
    }
}

extension DirectoryNames {
    /// Opens directory `id` by walking its recorded names down from `root`,
    /// checking every step. `ENOENT` when the walk does not arrive.
    static func open(
        _ chain: [(id: EntryID, name: [CChar])], from root: FileDescriptor
    ) throws(Errno) -> FileDescriptor {
        var current = try root.duplicate()
        for step in chain {
            let next: FileDescriptor
            do {
                next = try step.name.withUnsafeBufferPointer { buffer in
                    Result { () throws(Errno) -> FileDescriptor in
                        try FileDescriptor.open(buffer.baseAddress!, in: current, flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
                    }
                }.get()
            } catch {
                current.closeQuietly()
                throw error
            }
            current.closeQuietly()
            current = next
            let status = try current.status()
            guard EntryID(device: UInt64(status.st_dev), inode: UInt64(status.st_ino)) == step.id else {
                current.closeQuietly()
                throw Errno.noEntry
            }
        }
        return current
    }
}
