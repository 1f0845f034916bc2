import CFuse
import Glibc
import PurgeCore
import PurgeSys

/// One libfuse session: created with our operations, mounted, looped, torn down.
struct Session {
    let mount: MountAssembly
    var filesystem: ContainerFileSystem { mount.filesystem }
    let request: MountRequest

    func run() throws(MountError) {
        var ops = Operations.table()
        let arguments = ["purgefs", "-o", fuseOptions]
        let argv = CStringArray(arguments)
        var args = cfuse_args(Int32(argv.count), argv.pointer)
        defer {
            fuse_opt_free_args(&args)
            withExtendedLifetime(argv) {}
        }

        let userdata = Unmanaged.passRetained(filesystem)
        defer { userdata.release() }
        cfuse_capture_log(1)
        guard let session = fuse_session_new(&args, &ops, MemoryLayout<fuse_lowlevel_ops>.size, userdata.toOpaque()) else {
            throw MountError("libfuse refused the options \(arguments[2])\(Self.capturedLog())")
        }
        defer { fuse_session_destroy(session) }
        mount.faults.attach(session: session)
        guard fuse_set_signal_handlers(session) == 0 else {
            throw MountError("cannot install signal handlers")
        }
        defer { fuse_remove_signal_handlers(session) }
        guard fuse_session_mount(session, request.mountpoint) == 0 else {
            throw MountError("cannot mount on \(request.mountpoint)\(Self.capturedLog())")
        }
        cfuse_capture_log(0)
        defer { fuse_session_unmount(session) }
        // Before the unmount (defers run in reverse), which closes the
        // descriptor the ring commits to: a ring thread still serving a
        // caller (of a mount detached lazily, say) commits its reply first.
        defer { KernelWire.stopRing() }
        try KernelWire.attach(to: session, passthrough: filesystem.kernelPassthrough.wanted, ring: request.options.uring)
        filesystem.kernelPassthrough.attach(fuse_session_fd(session))
        defer { filesystem.kernelPassthrough.detach() }
        // Stopped before unmounting: no notice is queued on a connection nobody serves.
        do throws(Errno) {
            filesystem.notifier.attach(try FileDescriptor(rawValue: fuse_session_fd(session)).duplicate())
        } catch {
            throw MountError("cannot open a second descriptor on the FUSE connection: \(error)")
        }
        defer { filesystem.notifier.detach() }
        let guardProcess = ConnectionGuard.mount(at: request.mountpoint).flatMap { mount in
            mount.deviceMinor.flatMap { ConnectionGuard.start(mount, connection: $0) }
        }
        defer { guardProcess.map(ConnectionGuard.stop) }
        let publication = RuntimePublication.publish(
            mountpoint: request.mountpoint, state: mount.stateDirectory.descriptor, container: request.container,
            options: request.options)
        defer { publication?.withdraw() }
        // First once the loop ends (defers run in reverse): what sparse clones wrote is made durable.
        defer { mount.clones.sessionEnded() }
        let status = cfuse_session_loop_mt(
            session, FileSystemServer.maximumWorkerThreads, FileSystemServer.idleWorkerThreads, 0)
        if status < 0 {
            throw MountError("the session ended with an error: \(Errno(-status))")
        }
    }

    /// What libfuse said about a failure, as the end of our one line.
    private static func capturedLog() -> String {
        let line = String(cString: cfuse_captured_log())
        cfuse_capture_log(0)
        return line.isEmpty ? "" : ": " + line
    }

    /// The options libfuse and the kernel see: ours first, then the user's
    /// (each escaped as libfuse's option splitter expects).
    private var fuseOptions: String {
        var ours = ["fsname=" + request.container, "subtype=purgefs"]
        let user = request.options.fuseOptions
        // Other users may only see what the kernel lets them: purgefs serves
        // every request as root, so the kernel must check permissions.
        if user.contains("allow_other") && !user.contains("default_permissions") {
            ours.append("default_permissions")
        }
        return OptionList.joined(ours + user)
    }
}
