import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// Clones on a backing filesystem without reflinks (ext4): a clone is one
/// more hard link of the original's backing inode, kept private to purgefs,
/// with an *anchor* of its own (an empty inode in the state directory's
/// `clone-anchors`) that holds its identity, mode, owner, times and extended
/// attributes. See `LinkedCloneRegistry` for the model, and
/// `LinkedClones+Making`, `+Breaking` and `+Mount` for the changes.
///
/// Here: which identity a name of a shared backing inode has, the
/// attributes a member shows, and the charges that count shared data once.
///
/// Lock order: the data locks of breaks and clones (`dataLocks`, per backing
/// file), then namespace stripes, then this object's lock, then
/// `ContainerState`'s.
final class LinkedClones: Sendable {
    /// The registry and the charges: the clone lock.
    let guarded: Mutex<Table>
    /// One break or clone of a backing file's data at a time, by the
    /// backing file's identity (a group's shared inode, or a plain file's
    /// own): a break copies data outside the clone lock, and a file that
    /// shares nothing with it never waits for it.
    let dataLocks = KeyedLocks<EntryID>()

    /// Everything behind the clone lock.
    struct Table {
        var registry: LinkedCloneRegistry
        /// Names that share each group's data now (its primary counted when present).
        var sharers: [UInt64: [EntryID]] = [:]
        var sharedBytes: [EntryID: UInt64] = [:]
        /// The nodes the kernel knows of members, by identity.
        var memberNodes: [EntryID: WeakInode] = [:]
        /// Nodes of forgotten members (see `isOrphan`) by the backing file
        /// they still read: broken before that file is changed in place.
        var orphans: [EntryID: [WeakInode]] = [:]
    }

    struct WeakInode {
        weak var inode: Inode?
    }

    /// Any group exists: the fast path of every translation reads only this.
    private let active: Atomic<Bool>
    /// The ledger it charges.
    let state: ContainerState
    let directory: StateDirectory
    let store: RegistryStore<LinkedCloneRegistry>
    /// The state directory's `clone-anchors`, when it could be opened.
    let anchors: FileDescriptor?
    /// The container's root, opened for real (`open_by_handle_at` refuses `O_PATH`).
    let root: FileDescriptor
    /// New clones are made: anchors on the container's filesystem.
    let makesClones: Bool
    /// Members that share blocks with their base (`SparseMembers`).
    let sparse: SparseMembers
    /// The names files were made as by the opens that hold them (`created`).
    let createdNames = CreatedNames()
    /// Bases whose original is in a `beginOpen` bracket (its times may be
    /// set through the mount): their stamps before, one per bracket.
    let touches = Mutex<[EntryID: [BaseStamp]]>([:])

    /// For a mount whose probe found no reflinks (`CloneBackends.choose`).
    init(
        state: ContainerState, store: RegistryStore<LinkedCloneRegistry>, registry: LinkedCloneRegistry, directory: StateDirectory,
        root: FileDescriptor, blockMaps: BlockMaps
    ) {
        self.state = state
        self.store = store
        self.guarded = Mutex(Table(registry: registry))
        self.directory = directory
        self.root = (try? root.reopen(flags: O_RDONLY | O_DIRECTORY)) ?? root
        self.active = Atomic(!registry.isEmpty)
        anchors = Self.openAnchorDirectory(in: directory)
        let sameDevice = (try? directory.descriptor.status().st_dev) == (try? root.status().st_dev)
        makesClones = sameDevice && anchors != nil
        sparse = SparseMembers(maps: blockMaps, anchors: anchors, root: self.root)
    }

    private static func openAnchorDirectory(in directory: StateDirectory) -> FileDescriptor? {
        let name = LinkedCloneRegistry.anchorDirectory
        do throws(Errno) {
            try directory.descriptor.makeDirectory(name, mode: 0o700)
        } catch where error == .exists {
        } catch {
            return nil
        }
        return try? FileDescriptor.open(name, in: directory.descriptor, flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
    }

    var isActive: Bool { active.load(ordering: .relaxed) }

    // MARK: Identities

    /// The identity of `name` in `parent`, whose backing file has `status`:
    /// a member's anchor when the name is a clone sharing a backing inode,
    /// else the backing file's own.
    func identity(of status: stat, parent: EntryID, name: CName) -> EntryID {
        // Not only names with several links: a clone left alone (its original
        // gone) still has its anchor's identity.
        guard isActive, status.st_mode & S_IFMT == S_IFREG else { return EntryID(status) }
        let id = identity(ofListed: EntryID(status), parent: parent, name: name)
        if id != EntryID(status) { DebugSteps.reached("member-identified") }
        return id
    }

    /// The identity of the listed name `name` in `parent`, from its
    /// directory entry alone (the backing inode number, no stat): as
    /// `identity(of:parent:name:)` gives it, so a clone's `d_ino` is its
    /// `st_ino`.
    func identity(ofListed backing: EntryID, parent: EntryID, name: CName) -> EntryID {
        guard isActive else { return backing }
        let key = LinkedCloneRegistry.Name(parent: parent, name: Self.bytes(name))
        return guarded.withLock { table in table.registry.identity(of: backing, named: key) }
    }

    /// Whether `backing` is a group's shared inode (then its names are told
    /// apart by `identity`, not by inode number).
    func isShared(backing: EntryID) -> Bool {
        isActive && guarded.withLock { table in table.registry.group(backedBy: backing) != nil }
    }

    /// Whether `id` is a clone whose identity is its anchor.
    func isMember(_ id: EntryID) -> Bool {
        isActive && guarded.withLock { table in table.registry.members[id] != nil }
    }

    /// The backing inode number names of `id` have in directory listings.
    func listedInode(of id: EntryID) -> UInt64 {
        guard isActive else { return id.inode }
        return guarded.withLock { table in
            guard let member = table.registry.members[id], let group = table.registry.groups[member.group] else { return id.inode }
            return group.backing.inode
        }
    }

    /// Whether `id` shares data through purgefs: a write to it must break it
    /// from the data it shares (or, a sparse member, go through its view).
    /// A base a block map names is shared even when no linked name is left
    /// on it (it must not be written in place).
    func sharesData(_ id: EntryID) -> Bool {
        if sparse.has(id) || sparse.isBase(id) { return true }
        guard isActive else { return false }
        return guarded.withLock { table in
            if let group = table.registry.group(backedBy: id) {
                // The primary's node shares with every member, named or not:
                // purged behind the kernel, it may still be written through
                // a cached name, and its members must not see it.
                if table.registry.groups[group]?.backing == id && !table.registry.members(of: group).isEmpty { return true }
                return (table.sharers[group]?.count ?? 2) > 1
            }
            guard let member = table.registry.members[id] else { return false }
            if let group = table.registry.groups[member.group], sparse.isBase(group.backing) { return true }
            return (table.sharers[member.group]?.count ?? 2) > 1
        }
    }

    // MARK: Attributes

    /// `user.purgefs.content_id` and `shared` of a member or primary.
    func groupContent(of id: EntryID) -> UInt64? {
        guard isActive else { return nil }
        return guarded.withLock { table in
            let group = table.registry.members[id]?.group ?? table.registry.group(backedBy: id)
            guard let group, (table.sharers[group]?.count ?? 0) > 1, table.sharers[group]!.contains(id) else { return nil }
            return table.registry.groups[group]?.content
        }
    }

    func shared(of id: EntryID) -> UInt64? {
        guard isActive else { return nil }
        return guarded.withLock { table in table.sharedBytes[id] }
    }

    /// What the mount shows for a file with identity `id` whose backing file
    /// has `status`: a member shows its anchor's identity, mode, owner and
    /// times with one link; a primary shows its links without the clones'.
    func present(_ status: stat, as id: EntryID) -> stat {
        guard status.st_mode & S_IFMT == S_IFREG else { return status }
        guard isActive || sparse.isActive else { return id == EntryID(status) ? status : Self.presentForgotten(status, as: id) }
        let (member, clones) = guarded.withLock { (table) -> (Bool, Int) in
            if table.registry.members[id] != nil { return (true, 0) }
            guard let group = table.registry.group(backedBy: id), table.registry.groups[group]?.backing == id else { return (false, 0) }
            return (false, table.registry.namedMembers(of: group))
        }
        var shown = status
        if member {
            shown.st_nlink = 1
            shown.st_ino = ino_t(id.inode)
            if let anchor = try? withAnchor(id, { (file) throws(Errno) in try file.status() }) {
                shown.st_mode = anchor.st_mode
                shown.st_uid = anchor.st_uid
                shown.st_gid = anchor.st_gid
                shown.st_atim = anchor.st_atim
                shown.st_mtim = anchor.st_mtim
                shown.st_ctim = anchor.st_ctim
            }
        } else if clones > 0 || sparse.isBase(id) {
            // Neither the clones' names nor the base's own link (`b<ino>`) are the file's.
            let hidden = clones + (sparse.isBase(id) ? 1 : 0)
            shown.st_nlink = nlink_t(max(Int(status.st_nlink) - hidden, 1))
        } else if id != EntryID(status) {
            shown = Self.presentForgotten(status, as: id)
        }
        return shown
    }

    /// A forgotten member's node (see `isOrphan`) reading a group's data:
    /// its own number, never the data's (which another file's name shows),
    /// and no name left.
    private static func presentForgotten(_ status: stat, as id: EntryID) -> stat {
        var shown = status
        shown.st_ino = ino_t(id.inode)
        shown.st_nlink = 0
        return shown
    }

    /// Runs `body` with member `id`'s anchor (`O_PATH`), checked to be it.
    func withAnchor<T>(_ id: EntryID, _ body: (FileDescriptor) throws(Errno) -> T) throws(Errno) -> T {
        let file = try openAnchor(id)
        defer { file.closeQuietly() }
        return try body(file)
    }

    /// Member `id`'s anchor (`O_PATH`, the caller's to close), checked to be it.
    func openAnchor(_ id: EntryID) throws(Errno) -> FileDescriptor {
        guard let anchors else { throw Errno.noEntry }
        let file = try FileDescriptor.open(LinkedCloneRegistry.anchorName(of: id), in: anchors, flags: OpenFlags.path | O_NOFOLLOW)
        do throws(Errno) {
            guard EntryID(try file.status()) == id else { throw Errno(ESTALE) }
        } catch {
            file.closeQuietly()
            throw error
        }
        return file
    }

    /// Runs `body` holding the data locks of `inodes`' backing files, taken
    /// again should one of them move to another backing file (a primary's
    /// break re-points its members) while this caller waited.
    func withDataLocks<T>(of inodes: [Inode], _ body: () throws(Errno) -> T) throws(Errno) -> T {
        while true {
            let backings = inodes.map(\.backing)
            let done: T? = try dataLocks.withLocks(backings) { () throws(Errno) -> T? in
                guard inodes.map(\.backing) == backings else { return nil }
                return try body()
            }
            if let done { return done }
        }
    }

    func save(_ table: inout Table) {
        do {
            try store.save(&table.registry)
        } catch {
            Diagnostics.note("cannot save the linked clone registry: \(error)")
        }
        active.store(!table.registry.isEmpty, ordering: .relaxed)
    }

    static func bytes(_ name: CName) -> [UInt8] {
        CNames.bytes(name)
    }
}
