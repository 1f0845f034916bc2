import CFuse
import CLinux
import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// What libfuse 3.14 cannot negotiate with the kernel, reached through its
/// custom I/O hook (`fuse_session_custom_io`), which sees every message
/// exchanged on the connection (CLinux's `fuse_wire.c`):
///
/// - `FUSE_HANDLE_KILLPRIV_V2`, added to the INIT reply: the kernel stops
///   asking for `security.capability` (a GETXATTR round trip) before every
///   write, and instead tells the daemon when a write, an `O_TRUNC` open or a
///   truncation or chown must clear suid/sgid (`killsSetID`), which the daemon
///   then does itself (`ContainerFileSystem.clearSetIDIfAsked`).
/// - `FUSE_PASSTHROUGH` (with `passthrough=on`), for `KernelPassthrough`.
/// - `FUSE_DIRECT_IO_ALLOW_MMAP`: a shared mapping of a file opened in
///   direct I/O works, as on ext4.
/// - `FUSE_OVER_IO_URING` (with `uring=pinned` or `on`, where the kernel
///   offers it, and only once the ring's threads exist): requests then come
///   through one io_uring queue per CPU, served by that queue's threads
///   (`fuse_ring.c`), and their replies go back through the ring; libfuse's
///   own loop still serves what comes through /dev/fuse (FORGET, INTERRUPT,
///   and everything before the ring is ready). `transport` says which.
///
/// Messages are still read with read(2) (no splice on receive, as before:
/// libfuse's receive buffer never fitted the default pipe); replies of file
/// data to requests that came through /dev/fuse are still spliced (a ring
/// thread's never are: the kernel waits for those on the ring).
enum KernelWire {
    /// Routes the session's connection through the hook. Call after
    /// mounting and before the loop.
    static func attach(to session: OpaquePointer, passthrough: Bool, ring: RingMode) throws(MountError) {
        clinux_fuse_wire_configure(1, passthrough ? 1 : 0, ring == .off ? 0 : Int32(ringThreadsPerQueue)) {
            KernelWire.announce()
        }
        let pinned: Int32 = ring == .pinned ? 1 : 0
        let refusals = CurrentProcess.environmentValue("PURGEFS_RING_REFUSALS").flatMap { Int32($0) } ?? 0
        clinux_fuse_ring_configure(
            fuse_session_fd(session), UnsafeMutableRawPointer(session), pinned,
            { session, message, length in
                var buffer = fuse_buf()
                buffer.size = length
                buffer.mem = UnsafeMutableRawPointer(mutating: message)
                buffer.fd = -1
                fuse_session_process_buf(OpaquePointer(session), &buffer)
            },
            { line in Diagnostics.note(String(cString: line!)) }, refusals)
        var io = fuse_custom_io()
        io.read = { fd, buffer, length, userdata in clinux_fuse_wire_read(fd, buffer, length, userdata) }
        io.writev = { fd, vector, count, userdata in clinux_fuse_wire_writev(fd, vector, count, userdata) }
        io.splice_send = { input, inputOffset, output, outputOffset, length, flags, userdata in
            clinux_fuse_wire_splice_send(input, inputOffset, output, outputOffset, length, flags, userdata)
        }
        let status = fuse_session_custom_io(session, &io, fuse_session_fd(session))
        guard status == 0 else {
            throw MountError("cannot route the FUSE connection through purgefs's message hook: error \(-status)")
        }
    }

    /// Whether the kernel agreed to killpriv v2 (known once INIT is answered).
    static var handlesKillPrivilegeV2: Bool { clinux_fuse_wire_killpriv_v2() != 0 }

    /// Ring threads per online CPU (fewer where CPUs are many: 64 in all at most):
    /// each serves one request at a time, and the kernel gives a CPU's
    /// requests to that CPU's queue only, so this many requests from one CPU
    /// may wait in handlers (a download, a purge before a write) before its
    /// next request waits for one of them. Fault delays take at most half.
    static let ringThreadsPerQueue = 8

    /// Whether the calling thread may sleep in a fault's delay: a ring
    /// thread only while half of its CPU's ring threads do not. Pair `true`
    /// with `doneWaiting()`.
    static func mayWait() -> Bool { clinux_fuse_ring_may_wait() != 0 }
    static func doneWaiting() { clinux_fuse_ring_done_waiting() }

    /// Ends the ring's threads, their last replies committed. Before the
    /// unmount: libfuse's unmount closes the connection's descriptor, which
    /// the ring's commands name.
    static func stopRing() { clinux_fuse_ring_stop() }

    /// How requests reach the daemon (`user.purgefs.transport`):
    /// `io_uring QUEUESxTHREADS pinned|free` (the online CPUs' queues, the
    /// threads serving each), `/dev/fuse` (`uring=off`), or `/dev/fuse
    /// (io_uring refused: REASON)`: the kernel does not offer the ring, the
    /// ring could not be set up, or the kernel refused its entries (then
    /// the kernel sends requests through /dev/fuse until every queue has an
    /// entry again).
    static var transport: String {
        guard clinux_fuse_wire_ring_asked() != 0 else { return "/dev/fuse" }
        var status = clinux_fuse_ring_status()
        clinux_fuse_ring_status(&status)
        if clinux_fuse_wire_ring() == 0 {
            if status.setup_error != 0 { return refused("cannot set up the ring: \(Errno(-status.setup_error))") }
            return refused(notOffered.withLock { $0 } ?? "the kernel does not offer it")
        }
        if status.started == 0 { return refused("the ring has stopped") }
        if status.serving == 0 && status.last_error != 0 {
            return refused("the kernel refused its entries: \(Errno(-status.last_error))")
        }
        return "io_uring \(status.online)x\(status.per_queue) \(status.pinned != 0 ? "pinned" : "free")"
    }

    private static func refused(_ reason: String) -> String { "/dev/fuse (io_uring refused: \(reason))" }

    /// Why the kernel did not offer the ring, as its switch read at INIT.
    private static let notOffered = Mutex<String?>(nil)

    static let ringSwitch = "/sys/module/fuse/parameters/enable_uring"

    /// The daemon log's line at mount, once INIT is answered: how requests come.
    static func announce() {
        if clinux_fuse_wire_ring_asked() != 0 && clinux_fuse_wire_ring() == 0 {
            let reason: String
            if let value = try? FileDescriptor.open(path: ringSwitch, flags: O_RDONLY | O_CLOEXEC) {
                let text = (try? value.readAll(limit: 16)).map { String(decoding: $0, as: UTF8.self) } ?? ""
                value.closeQuietly()
                reason = "the kernel does not offer it (\(ringSwitch) is \(text.filter { !$0.isWhitespace }))"
            } else {
                reason = "the kernel does not offer it (no \(ringSwitch): Linux 6.14 or later has it)"
            }
            notOffered.withLock { $0 = reason }
        }
        Diagnostics.note("requests come through \(transport)")
    }

    /// Whether the kernel agreed to passthrough (`KernelPassthrough`).
    static var passesThrough: Bool { clinux_fuse_wire_passthrough() != 0 }

    /// Whether the request this thread serves asks the daemon to clear
    /// suid/sgid (`FUSE_WRITE_KILL_SUIDGID`, `FUSE_OPEN_KILL_SUIDGID`,
    /// `FATTR_KILL_SUIDGID`). The kernel sends it only under killpriv v2,
    /// for a caller without `CAP_FSETID`.
    static var killsSetID: Bool { clinux_fuse_wire_kill_suidgid() != 0 }
}
