import PurgeCore
import PurgeSys

/// What the cloud tier needs of the mount it serves, handed over once the
/// filesystem exists (`CloudTier.start(mount:log:)`), never the
/// filesystem itself: the ledger, the state directory, the clone backend,
/// the observers, the namespace locks, the kernel's notifier, the purger
/// (room for a download), and look-ups of the kernel's inodes and nodes by
/// identity.
///
/// The tier holds it until it stops (`CloudTier.stop`); the observers in
/// it hold the tier, so stopping is what lets the two go.
struct CloudMount: Sendable {
    /// The container's root directory.
    let root: FileDescriptor
    let state: ContainerState
    /// The mount's state directory (a sparse clone's flat copy for upload is made there).
    let stateDirectory: StateDirectory
    let clones: any CloneBackend
    /// Who hears what the tier changes (placeholders made, data dropped or downloaded).
    let events: Observers
    let locks: NamespaceLocks
    let notifier: KernelNotifier
    let purger: Purger
    /// The root directory's identity.
    let rootKey: EntryID
    /// The inode the kernel holds for an identity, if any.
    let existing: @Sendable (EntryID) -> Inode?
    /// The kernel's node for an identity, if it knows one.
    let kernelNode: @Sendable (EntryID) -> NodeID?
    /// A linked clone member leaves the data others share (the clone
    /// backend's `leaveSharedData`, which breaks the member as a write
    /// would, with what a break needs of the mount: `CloneBreaking`).
    let leaveSharedData: @Sendable (Inode) throws(Errno) -> Bool

    init(_ mount: MountAssembly) {
        let inodes = mount.inodes
        let clones = mount.clones
        root = mount.root
        state = mount.state
        stateDirectory = mount.stateDirectory
        self.clones = clones
        events = mount.events
        locks = mount.locks
        notifier = mount.notifier
        purger = mount.purger
        rootKey = inodes.inode(.root).key
        existing = { inodes.existing($0) }
        kernelNode = { inodes.node(for: $0) }
        let breaking = mount.breaking
        leaveSharedData = { (inode) throws(Errno) -> Bool in try clones.leaveSharedData(inode, breaking: breaking) }
    }
}
