import CFuse
import CLinux
import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// Kernel passthrough (Linux 6.9+, `passthrough=on`, the default): the
/// kernel reads a file opened read-only straight from its backing file,
/// without a round trip to the daemon per read. Negotiated at INIT by
/// `KernelWire`; a backing file is registered on the connection
/// (`FUSE_DEV_IOC_BACKING_OPEN`) and its id given in the open reply with
/// `FOPEN_PASSTHROUGH`.
///
/// The kernel's rules decide the shape (fs/fuse/iomode.c): while an inode
/// has a passed-through open, every open of it must carry `FOPEN_PASSTHROUGH`
/// with the same backing file (else the open fails, `EIO`); an inode with a
/// cached open takes no passed-through one; an open in direct I/O without
/// passthrough takes neither side. So the book counts, per node, the open
/// files of each kind, and keeps one backing id per node while it has
/// passed-through opens:
///
/// - a reader (`O_RDONLY`, no `O_TRUNC` or `O_DIRECT`) that
///   `ContainerFileSystem.mayPassThrough` allows is passed through when the
///   node has no ordinary open (`.passThrough`), and when it is not small
///   (`smallestRegistered`) or the node has a backing file already;
/// - any other open of a node with passed-through opens (a writer, `O_DIRECT`,
///   a reader a fault rule added since could match) gets the node's backing
///   with `FOPEN_DIRECT_IO` too (`.throughDaemon`): its reads and writes go
///   to the daemon as today (room, the ledger, clones, faults see them), and
///   the passed-through readers read the backing file those writes change.
///   Its `mmap` maps the backing file (the kernel's rule): the daemon sees
///   none of a shared mapping's stores, so the file's figures are taken
///   again when it is released;
/// - otherwise an open is ordinary, as libfuse replies: cached, or direct
///   I/O (`O_DIRECT`, write-only) as `describe` says. Every ordinary open,
///   a write-only one included, keeps readers from passing through until its
///   release: the kernel checks an open's reply only when its opener's
///   thread resumes, which may be after a reader answered later has
///   registered the node's backing file, and an open without
///   `FOPEN_PASSTHROUGH` of a node with a backing file fails (`EIO`). A
///   write-only open takes no io mode, but its reply may still be on its way.
///
/// Linked clones: a passed-through node is never made a clone's
/// destination (its backing file would become the anchor, and the data it
/// reads moves), and none passes through while a clone is made into it
/// (`withhold`). It may be a source, whose backing file stays its own (a
/// break copies the shared data elsewhere), as long as no writer the kernel
/// serves with that backing file is open: a writer's mapping would store
/// into data the clone shares. A clone made with such a writer open is
/// copied instead (`hasWriter`, after the source is shared), and a writer
/// opened beside passed-through readers of shared data breaks the clone
/// before its open is answered (`replyOpen`). The counts drop at release, which the kernel
/// sends after its own close; until the daemon has seen it, it may answer
/// an ordinary open (the kernel's count is already lower, and it accepts),
/// never a wrong passed-through one. The count of an open rises before its
/// reply is sent, so the daemon never answers an open of a node without the
/// backing file the kernel may hold for it, nor registers a second one
/// while the kernel may hold the first: the kernel would fail either open
/// (`EIO` here; a mismatched backing file is `EBUSY` inside the kernel).
///
/// When the kernel refuses to register a backing file (no `CAP_SYS_ADMIN`,
/// a backing filesystem it cannot stack on), the open is ordinary and
/// passthrough is off for the rest of the session, with one line in the log.
///
/// Lock order: `state` is a leaf but for an inode's slot (`Inode.backing`,
/// itself a leaf), held across one ioctl on the connection (registering or
/// dropping a backing id, which waits for no request).
final class KernelPassthrough: Sendable {
    private struct Entry {
        var backing: Int32 = 0
        /// Files the kernel serves with the backing file (`.passThrough`, `.throughDaemon`).
        var passedThrough: Set<ObjectIdentifier> = []
        /// Those of them open for writing (able to map the backing file writable).
        var writers: Set<ObjectIdentifier> = []
        /// Ordinary opens (cached, or direct I/O without the backing file),
        /// each until its release: none of them may find a backing file on
        /// the node when the kernel takes its reply.
        var ordinary = 0
        /// Clones being made of or into the node.
        var withheld = 0
        var isEmpty: Bool { passedThrough.isEmpty && ordinary == 0 && withheld == 0 }
    }

    private struct State {
        var device: Int32 = -1
        var refused = false
        var entries: [NodeID: Entry] = [:]
    }

    enum Decision: Equatable {
        /// Reads from the backing file.
        case passThrough(backing: Int32)
        /// The node's backing file in direct I/O: reads and writes to the daemon.
        case throughDaemon(backing: Int32)
        case ordinary
    }

    /// A reader of a smaller file registers no backing file: it is
    /// ordinary, served through the daemon and the page cache (kept across
    /// opens). Registering a backing file and dropping it cost two ioctls
    /// and the kernel an open and a close of the backing file, more than
    /// the one read request a file this small takes (FUSE reads up to
    /// 128 KiB a request); measured on 2,000 files of 4 KiB read cold and
    /// warm (BENCHMARKS, run S).
    static let smallestRegistered: Int64 = 128 << 10

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
    /// it until `release`. `eligible`: `mayPassThrough` of its inode, judged
    /// while its backing file was `backing` (a clone made since repoints it).
    /// `small`: a reader that registers no backing file of its own (it still
    /// passes through with the node's, which the kernel requires).
    func admit(_ file: OpenFile, flags: Int32, eligible: Bool, small: Bool = false, backing: EntryID) -> Decision {
        guard wanted, KernelWire.passesThrough, file.inode.isRegularFile else { return .ordinary }
        let reader = flags & O_ACCMODE == O_RDONLY && flags & (O_TRUNC | OpenFlags.direct) == 0
        let (decision, refusal) = state.withLock { state -> (Decision, Int32?) in
            var entry = state.entries[file.inode.id] ?? Entry()
            defer { state.entries[file.inode.id] = entry }
            if !entry.passedThrough.isEmpty {
                entry.passedThrough.insert(ObjectIdentifier(file))
                if flags & O_ACCMODE != O_RDONLY { entry.writers.insert(ObjectIdentifier(file)) }
                return (reader && eligible ? .passThrough(backing: entry.backing) : .throughDaemon(backing: entry.backing), nil)
            }
            if reader && eligible && !small && entry.ordinary == 0 && entry.withheld == 0 && file.inode.backing == backing
                && !state.refused && state.device >= 0 {
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
            entry.ordinary += 1
            return (.ordinary, nil)
        }
        if let refusal {
            Diagnostics.note("kernel passthrough is off for this session: the kernel refused a backing file (\(Errno(refusal)))")
        }
        return decision
    }

    /// Uncounts `file` (at release, or when its open reply failed); drops
    /// the node's backing id with its last passed-through file. Returns
    /// whether the kernel served it with the backing file.
    @discardableResult
    func release(_ file: OpenFile) -> Bool {
        guard wanted, file.inode.isRegularFile else { return false }
        return state.withLock { state -> Bool in
            guard var entry = state.entries[file.inode.id] else { return false }
            defer { state.entries[file.inode.id] = entry.isEmpty ? nil : entry }
            if entry.passedThrough.remove(ObjectIdentifier(file)) != nil {
                entry.writers.remove(ObjectIdentifier(file))
                if entry.passedThrough.isEmpty {
                    if state.device >= 0 { _ = clinux_fuse_backing_close(state.device, entry.backing) }
                    entry.backing = 0
                }
                return true
            }
            if entry.ordinary > 0 { entry.ordinary -= 1 }
            return false
        }
    }

    /// Whether node `id` has a file open for writing that the kernel serves
    /// with the backing file (its mapping would store into it).
    func hasWriter(_ id: NodeID) -> Bool {
        wanted && state.withLock { $0.entries[id]?.writers.isEmpty == false }
    }

    /// Keeps node `id` from passing through while a linked clone is made
    /// into it; false (nothing withheld) when it has passed-through opens
    /// now. Pair `true` with `endWithholding`.
    func withhold(_ id: NodeID) -> Bool {
        guard wanted else { return true }
        return state.withLock { state in
            var entry = state.entries[id] ?? Entry()
            guard entry.passedThrough.isEmpty else { return false }
            entry.withheld += 1
            state.entries[id] = entry
            return true
        }
    }

    func endWithholding(_ id: NodeID) {
        guard wanted else { return }
        state.withLock { state in
            guard var entry = state.entries[id] else { return }
            entry.withheld -= 1
            state.entries[id] = entry.isEmpty ? nil : entry
        }
    }
}

extension ContainerFileSystem {
    /// Whether the kernel may read `inode` from its backing file without
    /// asking the daemon: the one place that decides it (SPEC: a file that a
    /// fault rule could match, or whose unsynced writes a crash simulation
    /// must drop, is served by the daemon; each such feature says so as a
    /// `ServingPolicy`). Recency is stamped at open instead of at each read.
    /// Decided at open: a rule added later does not reach a reader already
    /// passed through, as it does not reach pages the kernel cached before.
    func mayPassThrough(_ inode: Inode) -> Bool {
        guard inode.isRegularFile else { return false }
        // A crash must be able to fail every descriptor opened before it; a
        // read rule could match it; a document of the cloud tier may be
        // evicted or downloaded while open (`ServingPolicy.refusesPassthrough`).
        if serving.refusesPassthrough(inode) { return false }
        // Data shared with a linked clone moves to another backing file when a clone breaks away.
        if inode.sharing.isShared || identities.sharesBacking(inode.backing) { return false }
        // A file with a data view lacks some of its bytes in its backing file: the kernel would read holes.
        // (One that cannot be opened now: not passed through either.)
        do throws(Errno) { if try dataViews.view(of: inode.key) != nil { return false } } catch { return false }
        return true
    }
}

extension ContainerFileSystem {
    /// Replies to `open`: with the node's backing file when
    /// `kernelPassthrough` says so (passed through: recency is stamped now,
    /// no read will reach the daemon; through the daemon: in direct I/O),
    /// else as libfuse replies. Returns libfuse's status (non-zero: the
    /// caller was interrupted).
    func replyOpen(_ request: fuse_req_t?, _ file: OpenFile, flags: Int32, info: UnsafeMutablePointer<fuse_file_info>) -> Int32 {
        let backing = file.inode.backing
        let eligible = kernelPassthrough.wanted && mayPassThrough(file.inode)
        let small = eligible && flags & O_ACCMODE == O_RDONLY
            && (try? file.descriptor.status().st_size).map { $0 < KernelPassthrough.smallestRegistered } == true
        // Kept from `describe`: a reader's close sends no flush.
        let noFlush = cfuse_fi_noflush(info) != 0 ? clinux_FOPEN_NOFLUSH : 0
        let openFlags: UInt32
        let backingID: Int32
        switch kernelPassthrough.admit(file, flags: flags, eligible: eligible, small: small, backing: backing) {
        case .ordinary:
            return fuse_reply_open(request, info)
        case .passThrough(let id):
            events.used(file.inode.key)
            // No keep_cache: the kernel refuses it with FOPEN_PASSTHROUGH.
            (openFlags, backingID) = (clinux_FOPEN_PASSTHROUGH | noFlush, id)
        case .throughDaemon(let id):
            // A writer's mapping is of the backing file: never of shared data.
            if flags & O_ACCMODE != O_RDONLY && (file.inode.sharing.isShared || identities.sharesBacking(file.inode.backing)) {
                do throws(Errno) {
                    try events.beforeModify(file.inode, .data(file), breaking: breaking)
                } catch {
                    fuse_reply_err(request, error.rawValue)
                    return -1  // not opened: given up as a failed reply is
                }
            }
            (openFlags, backingID) = (clinux_FOPEN_PASSTHROUGH | clinux_FOPEN_DIRECT_IO | noFlush, id)
        }
        var reply = clinux_fuse_open_out(fh: info.pointee.fh, open_flags: openFlags, backing_id: backingID)
        return fuse_reply_buf(request, &reply, MemoryLayout<clinux_fuse_open_out>.size)
    }

    /// Gives `file` up in the passthrough's book at its release: a file read
    /// from the backing file was used until now; one that may have mapped it
    /// writable has its figures taken again (the daemon saw none of its stores).
    func releasePassthrough(_ file: OpenFile) {
        guard kernelPassthrough.release(file) else { return }
        events.used(file.inode.key)
        if file.flags & O_ACCMODE != O_RDONLY { noteFigures(of: file) }
    }
}
