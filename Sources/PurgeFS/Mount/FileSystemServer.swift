import CFuse
import Glibc
import PurgeCore
import PurgeSys

/// Mounts a container and serves it until it is unmounted.
public enum FileSystemServer {
    /// Worker threads kept waiting for requests. libfuse starts a thread
    /// whenever none is free and ends one whenever more than this are idle:
    /// with a database's half-dozen concurrent writers and too few kept, it
    /// started and ended some 100 threads a second (each a stack, a 1 MiB
    /// buffer and a pipe). An idle thread costs memory only.
    static let idleWorkerThreads: UInt32 = 16
    /// The most worker threads at once. A handler may wait (room made by
    /// purging, a clone broken, a slow backing disk); with a few such, a
    /// small limit would leave no thread to answer anything else, so libfuse
    /// starts more on demand, up to this.
    static let maximumWorkerThreads: UInt32 = 64
    /// The daemon's malloc arenas (one a CPU online, at least 2) and the
    /// size from which a block is mapped on its own (`ProcessMemory.bound`).
    /// With glibc's defaults (eight arenas a CPU; a threshold that rises to
    /// the size of each mapped block freed, 1 MiB after a worker's request
    /// buffer or a copy buffer, and with it the point where an arena gives
    /// its free top back, to 2 MiB) every arena kept up to 2 MiB of freed
    /// memory resident: a soak's never-killed daemon grew 8 MiB in two
    /// minutes with its thread count steady and 1.5 MiB allocated in its
    /// arenas (DESIGN, Mounting: Memory).
    static var mallocArenas: Int32 { Int32(max(2, min(CurrentProcess.processorsOnline, 64))) }
    static let mappedBlockThreshold: Int32 = 256 << 10

    /// Checks the request, indexes the container, mounts, calls `whenReady`
    /// once the kernel's INIT has been answered (the mount is usable), and
    /// serves until unmounted. `whenReady` gets a descriptor of the daemon log
    /// in the state directory, opened before mounting: the daemon must never
    /// reach its own mount by path. Throws `MountError` for anything that
    /// prevents mounting.
    public static func serve(
        _ request: MountRequest, whenReady: @escaping @Sendable (_ log: FileDescriptor) -> Void
    ) throws(MountError) {
        if !ProcessMemory.bound(arenas: mallocArenas, mappedFrom: mappedBlockThreshold) {
            Diagnostics.note("cannot bound the malloc arenas (mallopt refused)")
        }
        let prepared = try MountPreparation(request)
        let faultRules = try request.options.faults.map(FaultRulesFile.load) ?? []
        // Every inode the kernel holds is an open O_PATH descriptor here.
        ResourceLimits.raiseOpenFiles()
        // The kernel has applied the caller's umask already.
        CurrentProcess.setFileCreationMask(0)
        do {
            try CurrentProcess.changeDirectory("/")
        } catch {
            Diagnostics.note("cannot change the working directory to /: \(error)")
        }
        let log = prepared.log
        // A shared device refuses a disagreeing member here, before anything is mounted.
        let device = try SharedDevice.join(request, root: prepared.root)
        defer { device?.leave() }
        let cloud = try CloudTier.prepare(request: request, root: prepared.root, state: prepared.state)
        // A mount that fails from here on stops the store's helper (rclone) too.
        var cloudStarted = false
        defer { if !cloudStarted { cloud?.remote.store.stop() } }
        let behind = BehindMount(request, root: prepared.root)
        let opened = try ContainerOpening(prepared: prepared, options: request.options, container: request.container)
        ProcessMemory.returnFreedMemory()
        let mount: MountAssembly
        do {
            mount = try MountAssembly(
                root: prepared.root, hidden: prepared.hidden, state: opened.state, clones: opened.clones, stateDirectory: opened.directory,
                log: opened.purgeLog, recency: opened.recency, cloud: cloud, device: device, crashable: request.options.crashable,
                // A passed-through write would never reach the operation log.
                record: request.options.record, passthrough: request.options.passthrough && request.options.record == nil
            ) { whenReady(log) }
        } catch {
            throw MountError("cannot read container \(request.container): \(error)")
        }
        for rule in faultRules { mount.faults.add(rule) }
        device?.attach(.init(state: mount.state, purger: mount.purger))
        let metrics = MetricsSampler(
            state: opened.state, root: prepared.root, directory: opened.directory, options: request.options, log: log,
            requests: mount.metricsRequests)
        metrics.start()
        defer { metrics.stop() }
        cloud?.start(mount: mount, log: opened.purgeLog)
        cloudStarted = true
        defer { cloud?.stop() }
        mount.filesystem.watchdog.start()
        defer { mount.filesystem.watchdog.stop() }
        let behindTracking = behind.start(mount)
        defer { behindTracking.stop() }
        mount.monitor.start()
        defer {
            mount.monitor.stop()
            mount.recency.compact(mount.state)
        }
        try Session(mount: mount, request: request).run()
    }
}
