import CFuse
import CLinux
import PurgeCore

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
/// - `FUSE_OVER_IO_URING` (with `uring=on`, where the kernel offers it):
///   requests then come through one io_uring queue per CPU, served by
///   that queue's threads (`fuse_ring.c`), and their replies go back
///   through the ring; libfuse's own loop still serves what comes through
///   /dev/fuse (FORGET, INTERRUPT, and everything before the ring is ready).
///
/// Messages are still read with read(2) (no splice on receive, as before:
/// libfuse's receive buffer never fitted the default pipe); replies of file
/// data are still spliced.
enum KernelWire {
    /// Routes the session's connection through the hook. Call after
    /// mounting and before the loop.
    static func attach(to session: OpaquePointer, passthrough: Bool, ring: RingMode) throws(MountError) {
        clinux_fuse_wire_configure(1, passthrough ? 1 : 0, ring == .off ? 0 : Int32(ringThreadsPerQueue))
        let pinned: Int32 = ring == .pinned ? 1 : 0
        clinux_fuse_ring_configure(fuse_session_fd(session), UnsafeMutableRawPointer(session), pinned) { session, message, length in
            var buffer = fuse_buf()
            buffer.size = length
            buffer.mem = UnsafeMutableRawPointer(mutating: message)
            buffer.fd = -1
            fuse_session_process_buf(OpaquePointer(session), &buffer)
        }
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

    /// Ring threads per CPU (fewer where CPUs are many: 64 in all at most):
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

    /// Whether INIT offered the ring and this session asked for it; known
    /// in libfuse's init callback, before the reply turns it on.
    static var ringOffered: Bool { clinux_fuse_wire_ring_offered() != 0 }

    /// Ends the ring's threads (after the unmount, before the connection closes).
    static func stopRing() { clinux_fuse_ring_stop() }

    /// Whether the kernel agreed to passthrough (`KernelPassthrough`).
    static var passesThrough: Bool { clinux_fuse_wire_passthrough() != 0 }

    /// Whether the request this thread serves asks the daemon to clear
    /// suid/sgid (`FUSE_WRITE_KILL_SUIDGID`, `FUSE_OPEN_KILL_SUIDGID`,
    /// `FATTR_KILL_SUIDGID`). The kernel sends it only under killpriv v2,
    /// for a caller without `CAP_FSETID`.
    static var killsSetID: Bool { clinux_fuse_wire_kill_suidgid() != 0 }
}
