import Glibc
import PurgeCore
import PurgeSys

/// Changes made behind the mount (in the backing directory, by a process
/// that does not go through the mount) are announced to the observers: a
/// name made, removed or moved as `foundBehindMount` (the ledger repairs
/// itself; what the mount's user did, `created`, `removed`, `moved`, it is
/// not), a size as `resized`, as a write's. Used by the live
/// tracker (`BehindMountTracker`) for the directories its events name, and
/// by the periodic verification (`BehindMountVerifier`) for the ones its
/// walk finds wrong.
///
/// One directory at a time, under that directory's namespace lock (the lock
/// every handler that changes names in it holds while it changes the backing
/// directory and the ledger), so the listing and the ledger are compared at
/// one moment: a handler's change is either in both or in neither.
/// `ContainerState`'s lock is taken only by the observers (the ledger's
/// repair, a `read`), never across I/O. Kernel notices are returned, to be
/// sent once no lock is held.
///
/// It holds what that takes of the mount, taken once at its assembly
/// (`init(_:)`): the ledger, the namespace locks, the observers, the
/// kernel's notifier, and three look-ups (a node by identity, a name's
/// identity, whether the clone backend charges a file), never the
/// filesystem object.
struct BehindMountReconciler: Sendable {
    /// The container's root directory (the tracker's and the verifier's walks start here).
    let root: FileDescriptor
    /// The state directory's entry, when it lies inside the container: never adopted.
    let hidden: HiddenEntry?
    /// The ledger, read here and repaired by the observers.
    let state: ContainerState
    /// The namespace locks a handler holds while it changes a directory.
    let locks: NamespaceLocks
    /// Who hears what was found (the ledger first).
    let events: Observers
    /// Where the kernel's caches are invalidated, once no lock is held.
    let notifier: KernelNotifier
    /// The kernel's node for an identity, if it knows one.
    let kernelNode: @Sendable (EntryID) -> NodeID?
    /// The identity of a name in a directory (a linked clone's own, not its backing file's).
    let identity: @Sendable (stat, CName, EntryID) -> EntryID
    /// Whether the clone backend charges a file's allocation (then the ledger's figure is not the backing file's).
    let charges: @Sendable (EntryID) -> Bool

    /// What reconciling the mount's directories needs, taken from its assembly.
    init(_ mount: MountAssembly) {
        let clones = mount.clones
        let inodes = mount.inodes
        root = mount.root
        hidden = mount.hidden
        state = mount.state
        locks = mount.locks
        events = mount.events
        notifier = mount.notifier
        kernelNode = { inodes.node(for: $0) }
        identity = { clones.identity(of: $0, parent: $2, name: $1) }
        charges = { clones.charges($0) }
    }

    struct Changes {
        /// One line per change applied, for the daemon log.
        var repairs: [String] = []
        /// For `KernelNotifier.send`, after every lock is released.
        var notices: [KernelNotifier.Notice] = []
        /// Directories that entered the ledger (made or moved in).
        var addedDirectories: [EntryID] = []
        /// Recorded directories an event named here, or found here under
        /// another name, by their name now: compared entry by entry next
        /// (`reconcile`).
        fileprivate var relisted: [(id: EntryID, name: [CChar])] = []

        mutating func merge(_ other: Changes) {
            repairs += other.repairs
            notices += other.notices
            addedDirectories += other.addedDirectories
        }
    }

    /// Brings the ledger's record of directory `id`, open at `directory`,
    /// in line with the backing directory. With `listing`, every entry is
    /// compared (names made, removed, renamed); `names` are entries whose
    /// data may have changed or that may be new, looked at one by one. The
    /// kernel is told about `names` in any case.
    ///
    /// A recorded directory that an event named, or found under another
    /// name, is either that directory (renamed, moved, changed) or a new one
    /// that got the inode number of one just deleted (ext4 hands it out again
    /// at once, even under the same name). Its entries are compared too,
    /// which is right either way: files of a deleted directory are not kept
    /// as if they lived on in the new one. Flags set on an earlier inode
    /// with the number are dropped (`dropFlagsOfAnEarlierInode`).
    func reconcile(_ id: EntryID, at directory: FileDescriptor, names: Set<[CChar]>, listing: Bool) -> Changes {
        let changes = (try? locks.withLocks(id) { () -> Changes in
            reconcileLocked(id, at: directory, names: names, listing: listing)
        }) ?? Changes()
        var all = changes
        all.relisted = []
        if let node = kernelNode(id) {
            for name in names where name.count > 1 {
                all.notices.append(.deleted(parent: node, child: nil, name: name))
            }
            if !changes.repairs.isEmpty { all.notices.append(.dataChanged(node)) }
        }
        for (child, name) in changes.relisted {
            guard let opened = (name.withUnsafeBufferPointer {
                try? FileDescriptor.open($0.baseAddress!, in: directory, flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
            }) else { continue }
            defer { opened.closeQuietly() }
            guard let status = try? opened.status(), EntryID(status) == child else { continue }
            all.merge(reconcile(child, at: opened, names: [], listing: true))
        }
        state.saveFlagsIfChanged()
        return all
    }

    private struct Seen {
        var name: [CChar]
        var status: stat
        var id: EntryID
    }

    private func reconcileLocked(_ id: EntryID, at directory: FileDescriptor, names: Set<[CChar]>, listing: Bool) -> Changes {
        var changes = Changes()
        // What the ledger has here, with the recorded names of subdirectories.
        guard let (recorded, directoryNames, place) = state.read({ ledger, names -> (Ledger.Children, [EntryID: [CChar]], String)? in
            guard let children = try? ledger.children(of: id) else { return nil }
            var recordedNames: [EntryID: [CChar]] = [:]
            for child in children.directories { recordedNames[child] = names.components(of: child)?.last?.name }
            return (children, recordedNames, names.path(of: id) ?? "\(id)")
        }) else { return changes }
        var recordedFiles: [EntryID: Int] = [:]
        for file in recorded.files { recordedFiles[file, default: 0] += 1 }
        let recordedDirectories = Set(recorded.directories)

        var seenFiles: [EntryID: Int] = [:]
        var seenDirectories: Set<EntryID> = []
        var found: [Seen] = []  // not recorded here: new, moved in, or another name
        var renamedHere: [Seen] = []  // a recorded directory under another name
        var touched: [Seen] = []  // recorded files whose figures may have changed

        func classify(_ name: CName, status: stat) {
            let kind = status.st_mode & S_IFMT
            guard kind == S_IFREG || kind == S_IFDIR, UInt64(status.st_dev) == id.device else { return }
            let entry = identity(status, name, id)
            let seen = Seen(name: CNames.copy(name), status: status, id: entry)
            if kind == S_IFREG {
                if recordedFiles[entry] != nil {
                    seenFiles[entry, default: 0] += 1
                    touched.append(seen)
                } else {
                    found.append(seen)
                }
            } else if recordedDirectories.contains(entry) {
                seenDirectories.insert(entry)
                if directoryNames[entry] != seen.name {
                    renamedHere.append(seen)
                } else if names.contains(seen.name) {
                    dropFlagsOfAnEarlierInode(seen, in: directory, place: place, into: &changes)
                    changes.relisted.append((entry, seen.name))
                }
            } else {
                found.append(seen)
            }
        }
        func skipped(_ name: CName) -> Bool {
            if let hidden, hidden.parent == id, hidden.hides(name) { return true }
            return CloneLeftovers.matches(name)
        }

        if listing {
            guard let stream = try? DirectoryStream(directory) else { return changes }
            while let entry = try? stream.next() {
                if entry.isDotOrDotDot || skipped(entry.name) { continue }
                let guess = EntryID(device: id.device, inode: entry.inode)
                let hinted = names.contains(CNames.copy(entry.name))
                if !hinted, entry.type == DT_REG, recordedFiles[guess] != nil {
                    seenFiles[guess, default: 0] += 1
                    continue
                }
                if !hinted, entry.type == DT_DIR, recordedDirectories.contains(guess),
                   directoryNames[guess].map({ CNames.equal($0, entry.name) }) == true {
                    seenDirectories.insert(guess)
                    continue
                }
                guard entry.type == DT_REG || entry.type == DT_DIR || entry.type == DT_UNKNOWN,
                      let status = try? stream.descriptor.status(of: entry.name) else { continue }
                classify(entry.name, status: status)
            }
        } else {
            for name in names where name.count > 1 {
                name.withUnsafeBufferPointer { buffer in
                    let name = buffer.baseAddress!
                    guard !skipped(name), let status = try? directory.status(of: name) else { return }
                    classify(name, status: status)
                }
            }
        }

        // Names made or moved in first, so a file moved between two
        // directories keeps its record (and its recency, pins) throughout.
        for entry in found {
            entry.name.withUnsafeBufferPointer { adopt(entry, name: $0.baseAddress!, in: id, at: directory, place: place, into: &changes) }
        }
        for entry in renamedHere {
            entry.name.withUnsafeBufferPointer {
                events.foundBehindMount(.moved(entry.status, id: entry.id, from: id, newName: $0.baseAddress!, to: id))
            }
            changes.repairs.append("directory \(place)/\(Self.text(entry.name)): renamed")
            dropFlagsOfAnEarlierInode(entry, in: directory, place: place, into: &changes)
            changes.relisted.append((entry.id, entry.name))
        }
        for entry in touched {
            // Its data may have changed, even at the same size: the kernel's
            // cached pages go (it does not compare mtimes itself, `initialize`).
            if let node = kernelNode(entry.id) { changes.notices.append(.dataChanged(node)) }
            dropFlagsOfAnEarlierInode(entry, in: directory, place: place, into: &changes)
            refresh(entry, in: directory, place: place, into: &changes)
        }
        guard listing else { return changes }
        for (file, count) in recordedFiles {
            for _ in 0..<(count - (seenFiles[file] ?? 0)) {
                events.foundBehindMount(.removed(Self.status(S_IFREG, file), id: file, from: id))
                changes.repairs.append("file \(file) in \(place): removed")
            }
        }
        for gone in recordedDirectories.subtracting(seenDirectories) {
            removeSubtree(gone, from: id)
            changes.repairs.append("directory \(place)/\(directoryNames[gone].map(Self.text) ?? "\(gone)"): removed with its subtree")
        }
        return changes
    }

    /// Records an entry found in directory `parent` that the ledger does not
    /// have there; a new directory's subtree is indexed as the mount's walk does.
    private func adopt(_ entry: Seen, name: CName, in parent: EntryID, at directory: FileDescriptor, place: String,
                       into changes: inout Changes) {
        if entry.status.st_mode & S_IFMT == S_IFREG {
            events.foundBehindMount(.created(entry.status, id: entry.id, name: name, in: parent))
            changes.repairs.append("file \(place)/\(Self.text(entry.name)): added (\(entry.status.st_size) bytes)")
            return
        }
        if let from = state.read({ ledger, _ in ledger.parent(ofDirectory: entry.id) }) {
            events.foundBehindMount(.moved(entry.status, id: entry.id, from: from, newName: name, to: parent))
            changes.repairs.append("directory \(place)/\(Self.text(entry.name)): moved in")
            changes.addedDirectories.append(entry.id)
            dropFlagsOfAnEarlierInode(entry, in: directory, place: place, into: &changes)
            changes.relisted.append((entry.id, entry.name))
            return
        }
        events.foundBehindMount(.created(entry.status, id: entry.id, name: name, in: parent))
        changes.addedDirectories.append(entry.id)
        guard let opened = try? FileDescriptor.open(name, in: directory, flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
        else { return }
        defer { opened.closeQuietly() }
        var files = 0
        var bytes: Int64 = 0
        try? TreeWalk(root: opened).run(visit: { visit in
            let holder = EntryID(visit.parent)
            if let hidden, hidden.parent == holder, hidden.hides(visit.name) { return false }
            if CloneLeftovers.matches(visit.name) { return false }
            let kind = visit.status.st_mode & S_IFMT
            guard kind == S_IFREG || kind == S_IFDIR, UInt64(visit.status.st_dev) == parent.device else { return false }
            let child = identity(visit.status, visit.name, holder)
            let known = state.read { ledger, _ -> (Ledger.Kind?, [EntryID], EntryID?) in
                (ledger.kind(of: child), (try? ledger.linkDirectories(of: child)) ?? [], ledger.parent(ofDirectory: child))
            }
            if kind == S_IFREG {
                if known.1.contains(holder) { return false }
                events.foundBehindMount(.created(visit.status, id: child, name: visit.name, in: holder))
                files += 1
                bytes += Int64(visit.status.st_size)
                return false
            }
            if known.0 == .directory {
                if let from = known.2, from != holder {
                    events.foundBehindMount(.moved(visit.status, id: child, from: from, newName: visit.name, to: holder))
                }
                return false  // a directory the ledger has: its subtree is known
            }
            events.foundBehindMount(.created(visit.status, id: child, name: visit.name, in: holder))
            changes.addedDirectories.append(child)
            return true
        })
        changes.repairs.append("directory \(place)/\(Self.text(entry.name)): added with \(files) files (\(bytes) bytes) below")
    }

    /// Drops `pinned`, `group` and `tombstone` of a recorded entry when they
    /// were set on an earlier inode that had its number: the flags are kept
    /// by identity, and a file or directory deleted behind the mount and
    /// followed at once by a new one with its inode number must not pass
    /// them on. Only entries with flags cost a `statx`.
    private func dropFlagsOfAnEarlierInode(_ entry: Seen, in directory: FileDescriptor, place: String,
                                           into changes: inout Changes) {
        guard state.withBooks({ $0.flags.flags(of: entry.id) }) != [],
              let born = StoredFlags.birthTime(of: entry.id, holding: entry.status, read: { () throws(Errno) in
                  try entry.name.withUnsafeBufferPointer { (name) throws(Errno) in try directory.birthTime(of: name.baseAddress!) }
              })
        else { return }
        let dropped = state.withBooks { books -> StoredFlags.Flags in
            guard !books.flags.belong(to: entry.id, born: born) else { return [] }
            let old = books.flags.flags(of: entry.id)
            books.flags.remove(entry.id)
            books.flagsChanged = true
            if old.contains(.pinned) { try? books.ledger.setPinned(entry.id, false) }
            if old.contains(.group) { try? books.ledger.setGroup(entry.id, false) }
            if old.contains(.tombstone) { try? books.ledger.setTombstone(entry.id, false) }
            return old
        }
        if !dropped.isEmpty {
            changes.repairs.append("\(place)/\(Self.text(entry.name)): flags of an earlier inode with its number dropped")
        }
    }

    /// Brings a recorded file's size and allocation up to date. Re-reads
    /// after the update until the backing file holds still, so a handler's
    /// write racing this one is never overwritten by an older figure.
    private func refresh(_ entry: Seen, in directory: FileDescriptor, place: String, into changes: inout Changes) {
        var status = entry.status
        for _ in 0..<4 {
            guard let known = state.read({ ledger, _ in try? ledger.file(entry.id) }) else { return }
            let allocated = ContainerState.allocated(status)
            let charged = charges(entry.id)
            guard known.size != UInt64(max(status.st_size, 0)) || (!charged && known.allocated != allocated) else { return }
            events.resized(status, id: entry.id)
            if changes.repairs.last != "file \(place)/\(Self.text(entry.name)): \(known.size) -> \(status.st_size) bytes" {
                changes.repairs.append("file \(place)/\(Self.text(entry.name)): \(known.size) -> \(status.st_size) bytes")
            }
            guard let again = (entry.name.withUnsafeBufferPointer { try? directory.status(of: $0.baseAddress!) }),
                  EntryID(again) == EntryID(status) else { return }
            status = again
        }
    }

    /// Forgets directory `gone` (recorded in `parent`) and everything the
    /// ledger has below it: it is no longer in the backing store there.
    private func removeSubtree(_ gone: EntryID, from parent: EntryID) {
        guard let children = state.read({ ledger, _ in try? ledger.children(of: gone) }) else { return }
        for file in children.files { events.foundBehindMount(.removed(Self.status(S_IFREG, file), id: file, from: gone)) }
        for directory in children.directories { removeSubtree(directory, from: gone) }
        events.foundBehindMount(.removed(Self.status(S_IFDIR, gone), id: gone, from: parent))
    }

    /// A stat carrying only the type and identity, for the removal of an
    /// entry no longer there to be stat'ed.
    private static func status(_ kind: mode_t, _ id: EntryID) -> stat {
        var status = stat()
        status.st_mode = kind
        status.st_dev = dev_t(id.device)
        status.st_ino = ino_t(id.inode)
        return status
    }

    static func text(_ name: [CChar]) -> String {
        String(decoding: name.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
