import CFuse
import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// The filesystem a mount serves: the container's backing directory passed
/// through, operation for operation, by descriptor.
///
/// Each FUSE operation is a method that returns its result or throws an
/// `Errno`; `Operations` turns that into exactly one reply.
final class ContainerFileSystem: Sendable {
    let inodes: InodeTable
    /// The container's root directory, opened before mounting (so an in-place
    /// mount still reaches the directory underneath).
    let root: FileDescriptor
    /// The state directory's entry, when it lies inside the container.
    let hidden: HiddenEntry?
    let timeouts: CacheTimeouts
    /// Called once, when the kernel's INIT has been answered.
    let whenReady: @Sendable () -> Void

    /// The ledger, the device and the purge counters.
    let state: ContainerState
    /// How clones are made, and what names of shared data stand for
    /// (`CloneBackend`: none, reflinks or linked clones, by the mount's probe).
    let clones: any CloneBackend
    let stateDirectory: StateDirectory
    let locks = NamespaceLocks()
    let notifier = KernelNotifier()
    let watchdog = RequestWatchdog()
    /// Kernel passthrough for readers (`passthrough=on`).
    let kernelPassthrough: KernelPassthrough
    let purger: Purger
    /// Asked before a file grows (`growing`): room, purging, the shared device, clone breaks.
    let growthPolicy: any GrowthPolicy
    /// What a clone break needs of the mount (room, the namespace locks, the
    /// root, the inode table, the events), handed to `beforeModify`'s
    /// observers and to a flatten instead of the filesystem.
    let breaking: CloneBreaking
    /// Asked by `copy_file_range` before it copies (`WholeFileCloning`: a whole file into an empty one is a clone).
    let copyPolicy: any CopyPolicy
    let monitor: SpaceMonitor
    let recency: RecencyStore
    /// The cloud tier, with `cloud=`.
    let cloud: CloudTier?
    /// The fault rules, an interceptor among `interceptors`.
    let faults: FaultInjector
    /// What sees every request before its handler, registered here at mount:
    /// fault rules, then the crash era (`Operations.intercept`).
    let interceptors: RequestInterceptors
    /// Who hears what the handlers did: the ledger, then the clone backend,
    /// then the cloud tier, then `observers` (docs/DESIGN.md, "Observers").
    let events: Observers
    /// Requests answered `ENOSPC` since the mount (`user.purgefs.enospc`, for `purgefs run`'s summary).
    let noSpaceReplies = NoSpaceReplies()
    /// Where `user.purgefs.metrics_sample` asks the metrics sampler for a sample.
    let metricsRequests = MetricsRequests()
    /// The daemon has said it ran out of descriptors (once a mount).
    let ranOutOfDescriptors = Atomic<Bool>(false)
    /// The shared device this container is on (`device=`), if any.
    let device: SharedDevice?
    /// The power-loss simulation (`purgefs crash`), an observer among `events` with `crashable`.
    let crashes: CrashRecorder
    /// Who answers each `user.purgefs.*` name: each feature its own, registered here at mount.
    let attributeProviders = AttributeProviders()

    init(root: FileDescriptor, hidden: HiddenEntry?, state: ContainerState, clones: any CloneBackend, stateDirectory: StateDirectory,
         log: PurgeLog, recency: RecencyStore, cloud: CloudTier? = nil, device: SharedDevice? = nil, observers: [any FileSystemObserver] = [], crashable: Bool = false,
         record: String? = nil,
         timeouts: CacheTimeouts = .init(), passthrough: Bool = false,
         whenReady: @escaping @Sendable () -> Void) throws(Errno) {
        self.root = root
        self.kernelPassthrough = KernelPassthrough(wanted: passthrough)
        self.cloud = cloud
        self.device = device
        self.hidden = hidden
        self.state = state
        self.clones = clones
        self.stateDirectory = stateDirectory
        self.recency = recency
        self.faults = FaultInjector(root: root, log: FaultLog(file: try? stateDirectory.openForAppending(FaultLog.fileName)))
        self.timeouts = timeouts
        self.whenReady = whenReady
        let inodes = InodeTable(
            root: try root.duplicate(), status: try root.status(),
            // open_by_handle_at refuses an O_PATH descriptor as its mount reference.
            pool: DescriptorPool(filesystem: try root.reopen(flags: O_RDONLY | O_DIRECTORY), openFilesLimit: ResourceLimits.openFiles))
        self.inodes = inodes
        let crashes = CrashRecorder(stateDirectory: stateDirectory, inodes: inodes, enabled: crashable)
        self.crashes = crashes
        self.interceptors = RequestInterceptors([FaultAdmission(faults: faults, inodes: inodes), CrashEra(recorder: crashes)])
        // The operation log (`record=`), last: it reads what each change left.
        let recorder = try record.map { (directory) throws(Errno) in try OperationRecorder(directory: directory, inodes: inodes) }
        // Without `crashable`, the recorder hears nothing: no cost.
        let events = Observers([state, clones] + (cloud.map { [$0] } ?? []) + (device.map { [$0] } ?? []) + observers
                               + (crashable ? [crashes] : []) + (recorder.map { [$0] } ?? []))
        self.events = events
        let purger = Purger(
            state: state, clones: clones, root: root, locks: locks, notifier: notifier, inodes: inodes, log: log,
            stateDirectory: stateDirectory)
        self.purger = purger
        let growthPolicy = RoomForGrowth(state: state, purger: purger, device: device, clones: clones, events: events)
        self.growthPolicy = growthPolicy
        let breaking = CloneBreaking(room: growthPolicy, locks: locks, root: root, inodes: inodes, events: events)
        self.breaking = breaking
        self.copyPolicy = WholeFileCloning(
            clones: clones, events: events,
            making: CloneMaking(state: state, locks: locks, root: root, kernelPassthrough: kernelPassthrough))
        self.monitor = SpaceMonitor(state: state, purger: purger, recency: recency, device: device) { (bytes: UInt64) -> UInt64 in
            events.needsRoom(bytes, reason: "monitor")
        }
        attributeProviders.register(
            [LedgerAttributes(state: state),
             SpaceAttributes(state: state, device: device, monitor: monitor, purger: purger, noSpaceReplies: noSpaceReplies),
             DeviceAttributes(state: state, device: device), CloneAttributes(state: state, clones: clones, breaking: breaking),
             faults, metricsRequests, CrashAttributes(recorder: crashes, simulation: CrashSimulation(self)), TransportAttribute()]
            + (cloud.map { [$0] } ?? []))
    }

    /// Whether `name` in `directory` is the hidden state directory.
    func isHidden(_ name: CName, in directory: Inode) -> Bool {
        hidden?.hides(name, in: directory) ?? false
    }

    /// Opens `name` in `directory` as a new reference for the kernel.
    /// Every reply that hands out an entry goes through here (or `entry(for:)`),
    /// so every one is counted exactly once.
    func lookUp(_ name: CName, in directory: Inode) throws(Errno) -> fuse_entry_param {
        if isHidden(name, in: directory) { throw Errno.noEntry }
        let descriptor = try directory.withDescriptor { (parent) throws(Errno) in
            try FileDescriptor.open(name, in: parent, flags: OpenFlags.path | O_NOFOLLOW)
        }
        return try entry(for: descriptor, name: name, in: directory)
    }

    /// Counts a reference to the file `name` in `directory`, open at
    /// `descriptor` (which the table takes over), and describes it for the kernel.
    func entry(for descriptor: FileDescriptor, name: CName, in directory: Inode) throws(Errno) -> fuse_entry_param {
        var descriptor = descriptor
        var status: stat
        var inode: Inode
        var tries = 0
        while true {
            do { status = try descriptor.status() } catch {
                descriptor.closeQuietly()
                throw error
            }
            let key = identity(of: status, name: name, in: directory.key)
            let isNew: Bool
            (inode, isNew) = inodes.remember(descriptor: descriptor, status: status, key: key)
            tries += 1
            // (Kept after a few tries, as before: a clone whose anchor went behind the mount's back.)
            if !isNew || clones.adopted(inode, status: status) || tries == 3 { break }
            // The identity went stale since it was read (a clone purged
            // meanwhile): the node goes, and the name is read again.
            inodes.forget(inode.id, count: 1)
            descriptor = try directory.withDescriptor { (parent) throws(Errno) in
                try FileDescriptor.open(name, in: parent, flags: OpenFlags.path | O_NOFOLLOW)
            }
        }
        var entry = fuse_entry_param()
        entry.ino = inode.id.rawValue
        entry.attr = present(status, of: inode)
        entry.attr_timeout = timeouts.attributes
        entry.entry_timeout = timeouts.entries
        return entry
    }

    func attributes(of id: NodeID) throws(Errno) -> stat {
        try attributes(of: inodes.inode(id))
    }

    func attributes(of inode: Inode) throws(Errno) -> stat {
        present(try inode.withDescriptor { (file) throws(Errno) in try file.status() }, of: inode)
    }

    /// What the mount shows of `inode`, whose backing file has `status`.
    func present(_ status: stat, of inode: Inode) -> stat {
        clones.present(crashes.presented(visible(status)), as: inode.key)
    }

    /// The identity of `name` in `directory`, whose backing file has
    /// `status`: the backing file's own, but for a linked clone. Every path
    /// that turns a name into an identity asks here (the listing's form is
    /// `clones.identity(ofListed:)`).
    func identity(of status: stat, name: CName, in directory: EntryID) -> EntryID {
        clones.identity(of: status, parent: directory, name: name)
    }

    /// Runs `body` with the descriptor holding `inode`'s mode, owner, times
    /// and extended attributes: its own, or a linked clone's anchor.
    func withAttributeHolder<T>(_ inode: Inode, _ body: (FileDescriptor) throws(Errno) -> T) throws(Errno) -> T {
        if inode.isRegularFile, let holder = try clones.attributeHolder(of: inode.key) {
            defer { holder.closeQuietly() }
            return try body(holder)
        }
        return try inode.withDescriptor(body)
    }

    /// `withAttributeHolder`, also telling `body` whether the descriptor is
    /// an open file's (`Inode.withDescriptorTellingLent`).
    func withAttributeHolderTellingLent<T>(_ inode: Inode, _ body: (FileDescriptor, _ lent: Bool) throws(Errno) -> T) throws(Errno) -> T {
        if inode.isRegularFile, let holder = try clones.attributeHolder(of: inode.key) {
            defer { holder.closeQuietly() }
            return try body(holder, false)
        }
        return try inode.withDescriptorTellingLent(body)
    }

    /// Attributes as seen through the mount: the directory holding the hidden
    /// state directory has one subdirectory, and so one link, fewer.
    func visible(_ status: stat) -> stat {
        guard let hidden, status.st_mode & S_IFMT == S_IFDIR,
              hidden.parent == EntryID(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
        else { return status }
        var adjusted = status
        adjusted.st_nlink -= 1
        return adjusted
    }
}

/// How long the kernel may trust what we told it. purgefs is the only writer
/// of the container while mounted, and what it changes on its own (purges,
/// evictions) it invalidates explicitly, so these can be long.
struct CacheTimeouts: Sendable {
    var entries: Double = 3600
    var attributes: Double = 3600
}

extension ContainerFileSystem {
    /// A request failed because the daemon (or the system) ran out of
    /// descriptors: said once a mount in the daemon log, with the figures
    /// that explain it.
    func noteOutOfDescriptors(_ error: Errno) {
        guard !ranOutOfDescriptors.exchange(true, ordering: .relaxed) else { return }
        let (whose, name) = error == .tooManyOpenFiles
            ? ("the daemon's limit of \(ResourceLimits.openFiles)", "EMFILE") : ("the system's limit", "ENFILE")
        Diagnostics.note("""
            out of file descriptors (\(whose), \(inodes.pool.count) of them held by inodes, \
            budget \(inodes.pool.budget)): requests that need one fail with \(name) until files are closed \
            (said once a mount)
            """)
    }
}
