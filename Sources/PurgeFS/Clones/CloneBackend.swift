import Glibc
import PurgeCore
import PurgeSys

/// How the mount makes clones, chosen once by its probe (`CloneBackends.choose`):
/// none, reflinks (`CloneBook`), or linked clones where the backing
/// filesystem has no reflinks (`LinkedClones`). The handlers never call a
/// backend by name: it hears what they did as an observer (charges follow
/// removes, moves, closes and resizes; `beforeModify` breaks a linked clone
/// before its data changes), and answers the questions below, which every
/// path asks here and nowhere else.
///
/// A backend holds the `ContainerState` it charges (the state does not hold
/// it). Lock order: namespace stripes, then the backend's locks (`CloneBook`'s
/// group locks, then its book; `LinkedClones`' clone lock), then
/// `ContainerState`'s; `LinkedClones.dataLocks` come before the stripes.
/// Every lock held across I/O is one file's or one clone group's.
protocol CloneBackend: FileSystemObserver, NodeIdentities {
    var kind: CloneBackendKind { get }
    /// A whole-file copy into an empty file may become a clone.
    var makesClones: Bool { get }

    // MARK: Names and identities (the one place)

    // `identity(of:parent:name:)`, `identity(ofListed:parent:name:)` and
    // `sharesBacking`: `NodeIdentities`, the passthrough's protocol.

    /// The inode number names of `id` have in directory listings.
    func listedInode(of id: EntryID) -> UInt64
    /// Whether `id`'s data is shared through purgefs, so that its backing
    /// file is not a file of its own (`user.purgefs.flat` 0): a linked clone,
    /// or the original one shares with. A reflink clone's backing file is a
    /// plain file, so nothing under reflinks answers true.
    func sharesData(_ id: EntryID) -> Bool
    /// How many files answer true to `sharesData` (`user.purgefs.not_flat`).
    var filesNotFlat: Int { get }

    // What the mount shows (`adopted`, `present`, `attributeHolder`): `NodeIdentities`.

    // MARK: Making and charging

    /// Makes `destination` (empty, open for writing) a clone of all of
    /// `source`; false when it did not (the caller copies instead).
    func clone(_ source: OpenFile, into destination: OpenFile, making: CloneMaking) -> Bool
    /// Bytes beyond its own that a write of `length` bytes to `id` may
    /// allocate because its data is shared (copy-on-write of whole blocks).
    func bytesCopiedOnWrite(of id: EntryID, length: Int) -> UInt64
    /// Whether the ledger's figures of `id` are the backend's charges.
    func charges(_ id: EntryID) -> Bool
    /// `id` was purged: the rest of its group is charged anew.
    func purged(_ id: EntryID)
    /// `user.purgefs.content_id` and `user.purgefs.shared`.
    func contentID(of id: EntryID) -> UInt64
    func sharedBytes(of id: EntryID) -> UInt64
    /// Gives `inode` data of its own when it shares any (`user.purgefs.flatten`,
    /// `purgefs flatten`), asking for room as a first write does.
    func flatten(_ inode: Inode, breaking: CloneBreaking) throws(Errno)
    /// At mount, after the walk: the registry brought in line with the disk.
    func settleAtMount(root: FileDescriptor)

    // MARK: Eviction (the cloud tier)

    /// Whether an eviction of `id`, whose backing file is `backing`, must
    /// be refused: it would drop data other names read, and `id` cannot
    /// leave that data without a copy (a linked clone's primary).
    func evictionDropsShared(_ id: EntryID, backing: EntryID) -> Bool
    /// Runs `body` holding what orders changes of `inode`'s data (a linked
    /// clone's data lock); an eviction takes it before the tier's `transfers`.
    func withDataHeld<T>(of inode: Inode, _ body: () throws(Errno) -> T) throws(Errno) -> T
    /// The same if that is free now, nil when it is held (this thread
    /// included): for an eviction under `transfers` (`optimize_storage`),
    /// which must not wait for it.
    func withDataHeldIfFree<T>(of inode: Inode, _ body: () throws(Errno) -> T) throws(Errno) -> T?
    /// Makes `inode` an empty file of its own, leaving the data it shares
    /// to the other names (a linked clone member, nothing copied); false
    /// when it has no such data to leave. Called within `withDataHeld`.
    func leaveSharedData(_ inode: Inode, breaking: CloneBreaking) throws(Errno) -> Bool

    // MARK: Reading shared data

    /// Whether a read of `inode` may read data another file changes in
    /// place (a linked clone member, still on its primary's backing file):
    /// a hint that says which reads go through `readingSharedData`.
    func readsSharedData(_ inode: Inode) -> Bool
    /// Runs `read` with `file`'s descriptor, loaded under its inode's data
    /// lock, which a primary's break holds while it moves its members to a
    /// copy before it is written in place: a read that loaded the old
    /// descriptor ends before that write. nil, `read` not run, when it
    /// shares nothing.
    func readingSharedData<T>(of file: OpenFile, _ read: (FileDescriptor) throws(Errno) -> T) throws(Errno) -> T?

    // MARK: Block sharing

    /// `id`'s data when its backing file is not all of it (a sparse linked
    /// clone: its shared blocks are holes there, read from its base): every
    /// path that reads, writes or hands out the descriptor asks this first.
    func sparseFile(of id: EntryID) -> SparseMemberFile?
    /// Whether `id` is a sparse member, asked of the table alone: what a
    /// decision about it reads (`sparseFile` is nil too when its file
    /// cannot be opened).
    func isSparse(_ id: EntryID) -> Bool
    /// Runs `body` with `inode`'s sparse member file under its data lock,
    /// the file asked for again under it (a drop or a flatten may have
    /// come first); nil, `body` not run, when `inode` is not one (any
    /// more): every change through the view goes through here.
    func withSparseFile<T>(of inode: Inode, _ body: (SparseMemberFile) throws(Errno) -> T) throws(Errno) -> T?
    /// The session ends: what sparse members wrote is made durable.
    func sessionEnded()
}

extension CloneBackend {
    func evictionDropsShared(_ id: EntryID, backing: EntryID) -> Bool { sharesBacking(backing) }
    func withDataHeld<T>(of inode: Inode, _ body: () throws(Errno) -> T) throws(Errno) -> T { try body() }
    func withDataHeldIfFree<T>(of inode: Inode, _ body: () throws(Errno) -> T) throws(Errno) -> T? { try body() }
    func leaveSharedData(_ inode: Inode, breaking: CloneBreaking) throws(Errno) -> Bool { false }
    func readsSharedData(_ inode: Inode) -> Bool { false }
    func readingSharedData<T>(of file: OpenFile, _ read: (FileDescriptor) throws(Errno) -> T) throws(Errno) -> T? { nil }
    func sparseFile(of id: EntryID) -> SparseMemberFile? { nil }
    func isSparse(_ id: EntryID) -> Bool { false }
    func withSparseFile<T>(of inode: Inode, _ body: (SparseMemberFile) throws(Errno) -> T) throws(Errno) -> T? { nil }
    func sessionEnded() {}
}

enum CloneBackendKind: String, Sendable {
    case none, reflink, linked
}

/// A backend under which every name stands for its backing file (none, or
/// reflinks): the answers about names and nodes that say so.
protocol BackingFileNames: CloneBackend {}

extension BackingFileNames {
    func identity(of status: stat, parent: EntryID, name: CName) -> EntryID { EntryID(status) }
    func identity(ofListed backing: EntryID, parent: EntryID, name: CName) -> EntryID { backing }
    func listedInode(of id: EntryID) -> UInt64 { id.inode }
    func sharesBacking(_ backing: EntryID) -> Bool { false }
    func sharesData(_ id: EntryID) -> Bool { false }
    var filesNotFlat: Int { 0 }
    func flatten(_ inode: Inode, breaking: CloneBreaking) throws(Errno) {}
    func adopted(_ inode: Inode, status: stat) -> Bool { true }
    func present(_ status: stat, as id: EntryID) -> stat { status }
    func attributeHolder(of id: EntryID) throws(Errno) -> FileDescriptor? { nil }
}

/// A mount whose probe found no way to clone: every copy is a copy, every
/// name its backing file.
final class NoClones: BackingFileNames {
    let state: ContainerState

    init(state: ContainerState) {
        self.state = state
    }

    var kind: CloneBackendKind { .none }
    var makesClones: Bool { false }
    func clone(_ source: OpenFile, into destination: OpenFile, making: CloneMaking) -> Bool { false }
    func bytesCopiedOnWrite(of id: EntryID, length: Int) -> UInt64 { 0 }
    func charges(_ id: EntryID) -> Bool { false }
    func purged(_ id: EntryID) {}
    func contentID(of id: EntryID) -> UInt64 { id.inode }
    func sharedBytes(of id: EntryID) -> UInt64 { 0 }
    func settleAtMount(root: FileDescriptor) {}

    /// The ledger records every file's figures as they are.
    func resized(_ status: stat, id: EntryID) {
        state.noteResized(status, id: id)
    }
}

enum CloneBackends {
    /// The mount's probe: reflinks where the state directory's filesystem
    /// clones (`CloneBook.probe`), else linked clones where anchors can be
    /// kept beside the container (or clones of an earlier mount are
    /// registered), else none.
    static func choose(
        state: ContainerState, directory: StateDirectory, root: FileDescriptor, reflinks: Bool,
        linked: (RegistryStore<LinkedCloneRegistry>, LinkedCloneRegistry), blockMaps: BlockMaps
    ) -> any CloneBackend {
        if reflinks { return CloneBook(state: state, directory: directory, root: root) }
        let linked = LinkedClones(state: state, store: linked.0, registry: linked.1, directory: directory, root: root, blockMaps: blockMaps)
        return linked.makesClones || linked.isActive || linked.sparse.isActive ? linked : NoClones(state: state)
    }
}
