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

    /// What a name stands for and what the mount shows of it (the mount's clone backend).
    let identities: any NodeIdentities
    let locks: NamespaceLocks
    let notifier: KernelNotifier
    let watchdog = RequestWatchdog()
    /// Kernel passthrough for readers (`passthrough=on`).
    let kernelPassthrough: KernelPassthrough
    /// Asked before a file grows (`growing`): room, purging, the shared device, clone breaks.
    let growthPolicy: any GrowthPolicy
    /// Asked by `copy_file_range` before it copies (a whole file into an empty one may become a clone).
    let copyPolicy: any CopyPolicy
    /// Asked for a file's data view by every path that reads, writes or hands out its descriptor.
    let dataViews: any DataViews
    /// What sees every request before its handler, registered at mount:
    /// fault rules, then the crash era (`Operations.intercept`).
    let interceptors: RequestInterceptors
    /// Who hears what the handlers did: the ledger, then the clone backend,
    /// then the cloud tier, then the other observers (docs/DESIGN.md, "Observers").
    let events: Observers
    /// Who answers each `user.purgefs.*` name: each feature its own, registered at mount.
    let attributeProviders: AttributeProviders
    /// Whether the kernel may keep a file's pages, skip its flush or read it
    /// from its backing file, and what `getattr` shows: the crash recorder,
    /// the fault rules, then the cloud tier, registered at mount.
    let serving: ServingPolicies
    /// `statfs`'s figures (Space's `MountSpaceFigures`).
    let space: any SpaceFigures
    /// The daemon has said it ran out of descriptors (once a mount).
    let ranOutOfDescriptors = Atomic<Bool>(false)
    /// The feature objects a handler still asks directly (`MountAssembly` makes them).
    let features: Features

    /// What the handlers still ask of features by name, not through a
    /// protocol of the pipeline: the clone break handed to `beforeModify`,
    /// and the `ENOSPC` count.
    struct Features: Sendable {
        /// What a clone break needs of the mount (room, the namespace locks,
        /// the root, the inode table, the events), handed to `beforeModify`'s
        /// observers instead of the filesystem.
        let breaking: CloneBreaking
        /// Requests answered `ENOSPC` since the mount (`user.purgefs.enospc`, for `purgefs run`'s summary).
        let noSpaceReplies: NoSpaceReplies
    }

    var breaking: CloneBreaking { features.breaking }
    var noSpaceReplies: NoSpaceReplies { features.noSpaceReplies }

    /// The filesystem over what `MountAssembly` made: the passthrough's own
    /// parts (the inode table, the namespace locks, the notifier, the kernel
    /// passthrough) and the pipeline registered at mount.
    init(root: FileDescriptor, hidden: HiddenEntry?, inodes: InodeTable, locks: NamespaceLocks, notifier: KernelNotifier,
         kernelPassthrough: KernelPassthrough, identities: any NodeIdentities, interceptors: RequestInterceptors, events: Observers,
         growthPolicy: any GrowthPolicy, copyPolicy: any CopyPolicy, dataViews: any DataViews, attributeProviders: AttributeProviders,
         serving: ServingPolicies, space: any SpaceFigures, features: Features, timeouts: CacheTimeouts, whenReady: @escaping @Sendable () -> Void) {
        self.root = root
        self.hidden = hidden
        self.inodes = inodes
        self.locks = locks
        self.notifier = notifier
        self.kernelPassthrough = kernelPassthrough
        self.identities = identities
        self.interceptors = interceptors
        self.events = events
        self.growthPolicy = growthPolicy
        self.copyPolicy = copyPolicy
        self.dataViews = dataViews
        self.attributeProviders = attributeProviders
        self.serving = serving
        self.space = space
        self.features = features
        self.timeouts = timeouts
        self.whenReady = whenReady
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
            if !isNew || identities.adopted(inode, status: status) || tries == 3 { break }
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
        identities.present(serving.presented(visible(status)), as: inode.key)
    }

    /// The identity of `name` in `directory`, whose backing file has
    /// `status`: the backing file's own, but for a linked clone. Every path
    /// that turns a name into an identity asks here (the listing's form is
    /// `identities.identity(ofListed:)`).
    func identity(of status: stat, name: CName, in directory: EntryID) -> EntryID {
        identities.identity(of: status, parent: directory, name: name)
    }

    /// Runs `body` with the descriptor holding `inode`'s mode, owner, times
    /// and extended attributes: its own, or a linked clone's anchor.
    func withAttributeHolder<T>(_ inode: Inode, _ body: (FileDescriptor) throws(Errno) -> T) throws(Errno) -> T {
        if inode.isRegularFile, let holder = try identities.attributeHolder(of: inode.key) {
            defer { holder.closeQuietly() }
            return try body(holder)
        }
        return try inode.withDescriptor(body)
    }

    /// `withAttributeHolder`, also telling `body` whether the descriptor is
    /// an open file's (`Inode.withDescriptorTellingLent`).
    func withAttributeHolderTellingLent<T>(_ inode: Inode, _ body: (FileDescriptor, _ lent: Bool) throws(Errno) -> T) throws(Errno) -> T {
        if inode.isRegularFile, let holder = try identities.attributeHolder(of: inode.key) {
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
