import PurgeCore
import PurgeSys

/// Changes made behind the mount, as `FileSystemServer.serve` sets them up:
/// the warning about processes an in-place mount cannot cover, the live
/// tracker (its source opened before the mount's walk) and the periodic
/// verification.
struct BehindMount {
    private let source: BehindMountTracker.Source?

    /// Before the container is indexed.
    init(_ request: MountRequest, root: FileDescriptor) {
        if request.mountpoint == request.container { Self.warnAboutProcesses(inside: request.container) }
        source = BehindMountTracker.open(root: root)
    }

    /// Starts tracking and verification for `mount`; call `stop` on what it returns.
    func start(_ mount: MountAssembly) -> Running {
        let reconciler = BehindMountReconciler(mount)
        let verifier = BehindMountVerifier(reconciler: reconciler)
        let tracker = BehindMountTracker(source: source, reconciler: reconciler, verifier: verifier)
        verifier.start()
        tracker?.start()
        return Running(tracker: tracker, verifier: verifier)
    }

    struct Running {
        let tracker: BehindMountTracker?
        let verifier: BehindMountVerifier

        func stop() {
            tracker?.stop()
            verifier.stop()
        }
    }

    /// One line on stderr naming the processes whose working directory,
    /// root or open files lie inside the container: an in-place mount covers
    /// the path, not what they hold, so they keep using the backing
    /// directory (tracked, but not through the mount).
    static func warnAboutProcesses(inside container: String) {
        let holders = ProcessesInside.holding(container)
        guard !holders.isEmpty else { return }
        let names = holders.map { "\($0.pid) (\($0.command))" }.joined(separator: ", ")
        try? FileDescriptor.standardError.writeAll(
            "purgefs: warning: these processes have their working directory, root or open files inside \(container) and bypass the mount: \(names)\n")
    }
}
