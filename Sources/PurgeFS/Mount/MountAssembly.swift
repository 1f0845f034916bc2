import Glibc
import PurgeCore
import PurgeSys

/// The mount's assembly: makes every feature of a mount and the
/// `ContainerFileSystem` over them, handing the filesystem only what its
/// handlers ask (the pipeline's protocols: interceptors, observers, the
/// growth and copy policies, data views, node identities, attribute
/// providers; and the few feature objects `ContainerFileSystem.Features`
/// names). What runs beside the handlers (the server's threads, the cloud
/// tier, changes behind the mount, a crash) takes what it needs from here,
/// never from the filesystem.
///
/// The order below is the order they were always made in: the fault rules,
/// the inode table, the crash recorder, the interceptors (fault rules, then
/// the crash era), the operation recorder, the observers (the ledger, the
/// clone backend, the cloud tier, the shared device, the others given, the
/// crash recorder, the operation recorder, last), the purger, the growth
/// policy, the clone break, the copy policy, the data views, the space
/// monitor, and the attribute providers once the filesystem exists.
final class MountAssembly: Sendable {
    let filesystem: ContainerFileSystem

    let root: FileDescriptor
    /// The state directory's entry, when it lies inside the container.
    let hidden: HiddenEntry?
    let inodes: InodeTable
    let locks: NamespaceLocks
    let notifier: KernelNotifier
    /// The ledger, the device and the purge counters.
    let state: ContainerState
    /// How clones are made, and what names of shared data stand for
    /// (`CloneBackend`: none, reflinks or linked clones, by the mount's probe).
    let clones: any CloneBackend
    let stateDirectory: StateDirectory
    let events: Observers
    let purger: Purger
    /// What a clone break needs of the mount, made once.
    let breaking: CloneBreaking
    let monitor: SpaceMonitor
    let recency: RecencyStore
    /// The cloud tier, with `cloud=`.
    let cloud: CloudTier?
    /// The shared device this container is on (`device=`), if any.
    let device: SharedDevice?
    let faults: FaultInjector
    let crashes: CrashRecorder
    /// Where `user.purgefs.metrics_sample` asks the metrics sampler for a sample.
    let metricsRequests = MetricsRequests()

    init(root: FileDescriptor, hidden: HiddenEntry?, state: ContainerState, clones: any CloneBackend, stateDirectory: StateDirectory,
         log: PurgeLog, recency: RecencyStore, cloud: CloudTier? = nil, device: SharedDevice? = nil, observers: [any FileSystemObserver] = [], crashable: Bool = false,
         record: String? = nil,
         timeouts: CacheTimeouts = .init(), passthrough: Bool = false,
         whenReady: @escaping @Sendable () -> Void) throws(Errno) {
        self.root = root
        let kernelPassthrough = KernelPassthrough(wanted: passthrough)
        self.cloud = cloud
        self.device = device
        self.hidden = hidden
        self.state = state
        self.clones = clones
        self.stateDirectory = stateDirectory
        self.recency = recency
        let locks = NamespaceLocks()
        self.locks = locks
        let notifier = KernelNotifier()
        self.notifier = notifier
        let faults = FaultInjector(root: root, log: FaultLog(file: try? stateDirectory.openForAppending(FaultLog.fileName)))
        self.faults = faults
        let inodes = InodeTable(
            root: try root.duplicate(), status: try root.status(),
            // open_by_handle_at refuses an O_PATH descriptor as its mount reference.
            pool: DescriptorPool(filesystem: try root.reopen(flags: O_RDONLY | O_DIRECTORY), openFilesLimit: ResourceLimits.openFiles))
        self.inodes = inodes
        let crashes = CrashRecorder(stateDirectory: stateDirectory, inodes: inodes, enabled: crashable)
        self.crashes = crashes
        let interceptors = RequestInterceptors([FaultAdmission(faults: faults, inodes: inodes), CrashEra(recorder: crashes)])
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
        let breaking = CloneBreaking(room: growthPolicy, locks: locks, root: root, inodes: inodes, events: events)
        self.breaking = breaking
        let copyPolicy = WholeFileCloning(
            clones: clones, events: events,
            making: CloneMaking(state: state, locks: locks, root: root, kernelPassthrough: kernelPassthrough))
        let dataViews = SparseMemberViews(clones: clones, breaking: breaking)
        let monitor = SpaceMonitor(state: state, purger: purger, recency: recency, device: device) { (bytes: UInt64) -> UInt64 in
            events.needsRoom(bytes, reason: "monitor")
        }
        self.monitor = monitor
        let noSpaceReplies = NoSpaceReplies()
        let attributeProviders = AttributeProviders()
        filesystem = ContainerFileSystem(
            root: root, hidden: hidden, inodes: inodes, locks: locks, notifier: notifier, kernelPassthrough: kernelPassthrough,
            identities: clones, interceptors: interceptors, events: events, growthPolicy: growthPolicy, copyPolicy: copyPolicy,
            dataViews: dataViews, attributeProviders: attributeProviders,
            serving: ServingPolicies([crashes, faults] + (cloud.map { [$0] } ?? [])),
            space: MountSpaceFigures(state: state, device: device),
            features: .init(breaking: breaking, noSpaceReplies: noSpaceReplies),
            timeouts: timeouts, whenReady: whenReady)
        attributeProviders.register(
            [LedgerAttributes(state: state),
             SpaceAttributes(state: state, device: device, monitor: monitor, purger: purger, noSpaceReplies: noSpaceReplies),
             DeviceAttributes(state: state, device: device), CloneAttributes(state: state, clones: clones, breaking: breaking),
             faults, metricsRequests, CrashAttributes(recorder: crashes, simulation: CrashSimulation(self)), TransportAttribute()]
            + (cloud.map { [$0] } ?? []))
    }
}
