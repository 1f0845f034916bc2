import CFuse
import CLinux
import Glibc
import PurgeSys
import Synchronization

/// Kernel passthrough (Linux 6.9+, `passthrough=on`): the kernel reads a
/// file opened read-only straight from its backing file, without a round
/// trip to the daemon per read. Negotiated at INIT by `KernelWire`; a
/// backing file is registered on the connection (`FUSE_DEV_IOC_BACKING_OPEN`)
/// and its id given in the open reply with `FOPEN_PASSTHROUGH`.
///
/// The kernel's rules decide the shape (fs/fuse/iomode.c): every open of
/// an inode that has a passed-through open must be passed through, to the
/// same backing file; an inode with a cached (ordinary) open takes no
/// passed-through one. So the book counts, per node, the open files of
/// each kind, and one backing id per node while it has passed-through
/// opens: a reader is passed through when the node has no ordinary open and
/// `ContainerFileSystem.mayPassThrough` allows it; any other open is
/// ordinary. A writer's open while a passed-through reader is still open is
/// answered as an ordinary open, which the kernel then fails (`EIO`): writes
/// never bypass the daemon (room, the ledger, clones). The counts drop at
/// release, which the kernel sends after its own close; until the daemon
/// has seen it, it may answer an ordinary open (the kernel's count is
/// already lower, and it accepts), never a wrong passed-through one.
///
/// When the kernel refuses to register a backing file (no `CAP_SYS_ADMIN`,
/// a backing filesystem it cannot stack on), the open is ordinary and
/// passthrough is off for the rest of the session, with one line in the log.
///
/// Lock order: `state` is a leaf, held across one ioctl on the connection
/// (registering or dropping a backing id, which waits for no request).
final class KernelPassthrough: Sendable {
    private struct Entry {
        var backing: Int32 = 0
        var passedThrough: Set<ObjectIdentifier> = []
        var ordinary = 0
        var isEmpty: Bool { passedThrough.isEmpty && ordinary == 0 }
    }

    private struct State {
        var device: Int32 = -1
        var refused = false
        var entries: [NodeID: Entry] = [:]
    }

    enum Decision: Equatable {
        case passThrough(backing: Int32)
        case ordinary
    }

    /// Asked for by the mount option.
    let wanted: Bool
    private let state = Mutex(State())

    init(wanted: Bool) { self.wanted = wanted }

    /// Starts using `device` (the session's descriptor on the connection; not owned).
    func attach(_ device: Int32) { state.withLock { $0.device = device } }

    /// Stops registering backing files (the session is ending).
    func detach() { state.withLock { $0.device = -1 } }

    /// Whether opens may be passed through now.
    var isActive: Bool {
        wanted && KernelWire.passesThrough && state.withLock { !$0.refused && $0.device >= 0 }
    }

    /// Decides how the kernel serves `file`, opened with `flags`, and counts
    /// it until `release`. `eligible`: `mayPassThrough` of its inode.
    func admit(_ file: OpenFile, flags: Int32, eligible: Bool) -> Decision {
        guard wanted, KernelWire.passesThrough, file.inode.isRegularFile else { return .ordinary }
        let reader = flags & O_ACCMODE == O_RDONLY && flags & (O_TRUNC | OpenFlags.direct) == 0
        let (decision, refusal) = state.withLock { state -> (Decision, Int32?) in
            var entry = state.entries[file.inode.id] ?? Entry()
            defer { state.entries[file.inode.id] = entry }
            if reader && eligible && entry.ordinary == 0 {
                if !entry.passedThrough.isEmpty {
                    entry.passedThrough.insert(ObjectIdentifier(file))
                    return (.passThrough(backing: entry.backing), nil)
                }
                if !state.refused && state.device >= 0 {
                    let id = clinux_fuse_backing_open(state.device, file.descriptor.rawValue)
                    if id > 0 {
                        entry.backing = id
                        entry.passedThrough.insert(ObjectIdentifier(file))
                        return (.passThrough(backing: id), nil)
                    }
                    state.refused = true
                    entry.ordinary += 1
                    return (.ordinary, -id)
                }
            }
            entry.ordinary += 1
            return (.ordinary, nil)
        }
        if let refusal {
            Diagnostics.note("kernel passthrough is off for this session: the kernel refused a backing file (\(Errno(refusal)))")
        }
        return decision
    }

    /// Uncounts `file` (at release, or when its open reply failed); drops
    /// the node's backing id with its last passed-through file.
    func release(_ file: OpenFile) {
        guard wanted, file.inode.isRegularFile else { return }
        state.withLock { state in
            guard var entry = state.entries[file.inode.id] else { return }
            if entry.passedThrough.remove(ObjectIdentifier(file)) != nil {
                if entry.passedThrough.isEmpty {
                    if state.device >= 0 { _ = clinux_fuse_backing_close(state.device, entry.backing) }
                    entry.backing = 0
                }
            } else if entry.ordinary > 0 {
                entry.ordinary -= 1
            }
            state.entries[file.inode.id] = entry.isEmpty ? nil : entry
        }
    }
}

extension ContainerFileSystem {
    /// Whether the kernel may read `inode` from its backing file without
    /// asking the daemon: the one place that decides it (SPEC: a file that a
    /// fault rule could match, or whose unsynced writes a crash simulation
    /// must drop, is served by the daemon; crash simulation adds its
    /// condition here). Recency is stamped at open instead of at each read.
    /// Decided at open: a rule added later does not reach a reader already
    /// passed through, as it does not reach pages the kernel cached before.
    func mayPassThrough(_ inode: Inode) -> Bool {
        guard inode.isRegularFile else { return false }
        // A crash must be able to fail every descriptor opened before it.
        if crashes.isRecording { return false }
        // A read rule could match it: its reads must reach the injector.
        if faults.mayFailReads(of: inode) { return false }
        // Data shared with a linked clone moves to another backing file when a clone breaks away.
        if inode.sharing.isShared || clones.sharesBacking(inode.backing) { return false }
        // A document of the cloud tier may be evicted or downloaded while open.
        if let cloud, cloud.tracks(inode.key) { return false }
        return true
    }
}

extension ContainerFileSystem {
    /// Replies to `open`: passed through when `kernelPassthrough` says so
    /// (the reply then carries the backing id, and recency is stamped now:
    /// no read will reach the daemon), else as libfuse replies. Returns
    /// libfuse's status (non-zero: the caller was interrupted).
    func replyOpen(_ request: fuse_req_t?, _ file: OpenFile, flags: Int32, info: UnsafeMutablePointer<fuse_file_info>) -> Int32 {
        let eligible = kernelPassthrough.wanted && mayPassThrough(file.inode)
        switch kernelPassthrough.admit(file, flags: flags, eligible: eligible) {
        case .ordinary:
            return fuse_reply_open(request, info)
        case .passThrough(let backing):
            events.used(file.inode.key)
            // Only FOPEN_PASSTHROUGH: the kernel refuses it with keep_cache or direct_io.
            var reply = clinux_fuse_open_out(fh: info.pointee.fh, open_flags: clinux_FOPEN_PASSTHROUGH, backing_id: backing)
            return fuse_reply_buf(request, &reply, MemoryLayout<clinux_fuse_open_out>.size)
        }
    }
}
