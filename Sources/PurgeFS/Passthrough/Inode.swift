import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// A backing file the kernel knows by a `NodeID`, reached through an
/// `O_PATH | O_NOFOLLOW` descriptor so every operation works by descriptor,
/// never by a path string: renames of it or of any directory above it cannot
/// misdirect us, and a ~4 KB path costs nothing.
///
/// The kernel may hold more inodes than the process may hold descriptors, so
/// the descriptor of an idle inode can be evicted (`DescriptorPool`): its
/// file handle is kept instead, and the descriptor reopened from it on the
/// next use. An inode in use, open, or on a filesystem without file handles
/// keeps its descriptor. While a regular file is open, the open file's
/// descriptor stands for the inode's (`lend`): an open file costs one
/// descriptor, not two, and the inode's own is reopened from it (`reclaim`)
/// when the last open file lets go.
///
/// `key` is the file's identity for the kernel and the ledger, and never
/// changes. Its backing inode is the same file, except for a clone on a
/// backing filesystem without reflinks (`LinkedClones`), which reads data
/// shared with other files until its first modification re-points it.
final class Inode: Sendable {
    let id: NodeID
    let key: EntryID
    /// `S_IFMT` bits: the file type never changes for an inode.
    let fileType: mode_t
    let pool: DescriptorPool
    private let slot: Mutex<Slot>
    /// The files open on it and whether its data is shared with other files
    /// (linked clones): the clone backend's, and the modification bracket's.
    let sharing = InodeSharing()

    private struct Slot {
        /// The descriptor, or -1 while evicted.
        var descriptor: Int32
        /// `descriptor` is an open file's (`lend`), which that file closes:
        /// never closed nor counted here.
        var borrowed = false
        /// Operations using the descriptor now.
        var users: Int32 = 0
        /// Open files of this inode (`pin`).
        var pins: Int32 = 0
        var lastUse: UInt64 = 0
        /// Taken at the first eviction.
        var handle: FileHandle?
        /// The backing file's identity, which a reopened handle must have.
        var backing: EntryID
        /// Descriptors replaced while in use, closed when the users are done.
        var retired: [Int32] = []
        /// Open files' descriptors that stood for the inode's and were
        /// replaced while in use: their files must not close them before
        /// the users are done (`reclaim` hands them over).
        var replacedLoans: [Int32] = []

        /// One use ends: the retired descriptors to close once none is left.
        mutating func endUse() -> [Int32] {
            users -= 1
            guard users == 0 else { return [] }
            replacedLoans = []
            defer { retired = [] }
            return retired
        }
    }

    init(id: NodeID, descriptor: FileDescriptor, key: EntryID, backing: EntryID, fileType: mode_t, pool: DescriptorPool) {
        self.id = id
        self.key = key
        self.fileType = fileType
        self.pool = pool
        self.slot = Mutex(Slot(descriptor: descriptor.rawValue, lastUse: pool.tick(), backing: backing))
        pool.opened()
    }

    var isDirectory: Bool { fileType == S_IFDIR }
    var isSymbolicLink: Bool { fileType == S_IFLNK }
    var isRegularFile: Bool { fileType == S_IFREG }

    /// Runs `body` with the inode's `O_PATH` descriptor, valid only inside it.
    func withDescriptor<T>(_ body: (FileDescriptor) throws(Errno) -> T) throws(Errno) -> T {
        let (descriptor, _) = try acquire()
        defer { release() }
        return try body(descriptor)
    }

    /// `withDescriptor`, also telling `body` whether the descriptor is an
    /// open file's (`lend`), which is not `O_PATH`: calls that refuse
    /// `O_PATH` (`fgetxattr`) take it as it is, without the `/proc/self/fd`
    /// link's path walk.
    func withDescriptorTellingLent<T>(_ body: (FileDescriptor, _ lent: Bool) throws(Errno) -> T) throws(Errno) -> T {
        let (descriptor, lent) = try acquire()
        defer { release() }
        return try body(descriptor, lent)
    }

    /// Keeps the descriptor from eviction while a file of this inode is open:
    /// an unlinked file cannot be reopened by its handle.
    func pin() throws(Errno) {
        _ = try acquire()
        let retired = slot.withLock { slot in
            slot.pins += 1
            return slot.endUse()
        }
        for descriptor in retired { FileDescriptor(rawValue: descriptor).closeQuietly() }
    }

    func unpin() {
        slot.withLock { slot in slot.pins -= 1 }
    }

    /// Lets the open file's `descriptor` (a pinned regular file's, of the
    /// same backing file) stand for the inode's own, which is closed: an open
    /// file then costs one descriptor. The file gives it back at its release
    /// (`reclaim`). No-op when another open file's stands already.
    func lend(_ descriptor: FileDescriptor) {
        guard isRegularFile else { return }
        let own: Int32? = slot.withLock { slot in
            guard !slot.borrowed, slot.descriptor >= 0, slot.pins > 0 else { return nil }
            let own = slot.descriptor
            slot.descriptor = descriptor.rawValue
            slot.borrowed = true
            if slot.users > 0 {
                slot.retired.append(own)
                return -1
            }
            return own
        }
        guard let own else { return }
        pool.closed()
        if own >= 0 { FileDescriptor(rawValue: own).closeQuietly() }
    }

    /// An open file whose descriptors are `descriptors` is released: if one
    /// of them stands for the inode's (`lend`), another open file's stands
    /// instead, or the inode gets a descriptor of its own again, reopened from
    /// it (an unlinked file has no other way back). Returns the descriptors
    /// the inode took over (in use now, or kept for want of a new one), which
    /// the file must not close.
    func reclaim(_ descriptors: [Int32], others: [OpenFile]) -> [Int32] {
        let (lent, inUse): (Int32?, [Int32]) = slot.withLock { slot in
            let inUse = slot.replacedLoans.filter(descriptors.contains)
            if !inUse.isEmpty {
                slot.replacedLoans.removeAll(where: descriptors.contains)
                slot.retired += inUse
            }
            guard slot.borrowed, descriptors.contains(slot.descriptor) else { return (nil, inUse) }
            return (slot.descriptor, inUse)
        }
        guard let lent else { return inUse }
        // Another open file of the inode (held here, so its own release comes after this).
        if let other = others.first {
            let standIn = other.descriptor.rawValue
            let taken = slot.withLock { slot -> Bool in
                guard slot.borrowed, slot.descriptor == lent else { return false }
                slot.descriptor = standIn
                guard slot.users > 0 else { return false }
                slot.retired.append(lent)
                return true
            }
            withExtendedLifetime(other) {}
            return inUse + (taken ? [lent] : [])
        }
        // Past the budget, a file that still has a name is left to be
        // reopened by its handle on its next use.
        let lentFile = FileDescriptor(rawValue: lent)
        if pool.isFull, let status = try? lentFile.status(), status.st_nlink > 0,
           let handle = (try? FileHandle(of: lentFile)) {
            let taken: Bool? = slot.withLock { slot in
                guard slot.borrowed, slot.descriptor == lent else { return nil }
                slot.borrowed = false
                slot.descriptor = -1
                slot.handle = handle
                guard slot.users > 0 else { return false }
                slot.retired.append(lent)
                return true
            }
            if let taken { return inUse + (taken ? [lent] : []) }
            return inUse
        }
        let own = try? lentFile.reopen(flags: OpenFlags.path)
        let (taken, counted): (Bool, Bool) = slot.withLock { slot in
            guard slot.borrowed, slot.descriptor == lent else { return (false, false) }
            slot.borrowed = false
            guard let own else { return (true, true) }  // kept as the inode's own
            slot.descriptor = own.rawValue
            if slot.users > 0 {
                slot.retired.append(lent)
                return (true, true)
            }
            return (false, true)
        }
        if counted { pool.opened() } else { own?.closeQuietly() }
        return inUse + (taken ? [lent] : [])
    }

    /// The descriptor, counted as in use, and whether it is an open file's (`lend`).
    private func acquire() throws(Errno) -> (FileDescriptor, lent: Bool) {
        let tick = pool.tick()
        let (current, lent, handle, backing): (Int32, Bool, FileHandle?, EntryID) = slot.withLock { slot in
            if slot.descriptor >= 0 {
                slot.users += 1
                slot.lastUse = tick
            }
            return (slot.descriptor, slot.borrowed, slot.handle, slot.backing)
        }
        if current >= 0 { return (FileDescriptor(rawValue: current), lent) }
        guard let handle else { throw Errno.badFileDescriptor }  // evicted without a handle: a bug
        let reopened = try pool.reopen(handle, expecting: backing)
        let (descriptor, duplicate): (Int32, Bool) = slot.withLock { slot in
            slot.users += 1
            slot.lastUse = tick
            if slot.descriptor >= 0 { return (slot.descriptor, true) }  // another thread reopened it first
            slot.descriptor = reopened.rawValue
            return (reopened.rawValue, false)
        }
        if duplicate { reopened.closeQuietly() } else { pool.opened() }
        // Not said lent: false is always safe (the `/proc/self/fd` link takes any descriptor).
        return (FileDescriptor(rawValue: descriptor), false)
    }

    private func release() {
        let retired = slot.withLock { slot in slot.endUse() }
        for descriptor in retired { FileDescriptor(rawValue: descriptor).closeQuietly() }
    }

    /// The backing file's identity (the key, but for a linked clone).
    var backing: EntryID { slot.withLock { $0.backing } }

    /// Points the inode at another backing file: `descriptor` (`O_PATH`, taken
    /// over) of identity `backing`. Users of the old descriptor finish with it.
    func repoint(to descriptor: FileDescriptor, backing: EntryID) {
        let (old, closeNow): (Int32, Bool) = slot.withLock { slot in
            var old = slot.descriptor
            slot.descriptor = descriptor.rawValue
            slot.backing = backing
            slot.handle = nil
            if slot.borrowed {
                // An open file's, which it closes (after the users: `reclaim`).
                slot.borrowed = false
                if slot.users > 0 { slot.replacedLoans.append(old) }
                old = -1
            }
            if old >= 0 && slot.users > 0 { slot.retired.append(old); return (old, false) }
            return (old, old >= 0)
        }
        if old < 0 { pool.opened() }
        if closeNow { FileDescriptor(rawValue: old).closeQuietly() }
    }

    /// Takes `descriptor` (a fresh one of the same identity) if this inode's
    /// was evicted; returns whether it did.
    func adopt(_ descriptor: FileDescriptor) -> Bool {
        let adopted = slot.withLock { slot -> Bool in
            guard slot.descriptor < 0 else { return false }
            slot.descriptor = descriptor.rawValue
            slot.handle = nil
            return true
        }
        if adopted { pool.opened() }
        return adopted
    }

    /// `withDescriptor` for callers with nothing to report on failure.
    func withDescriptorQuietly<T>(_ body: (FileDescriptor) -> T) -> T? {
        try? withDescriptor { (descriptor) throws(Errno) -> T in body(descriptor) }
    }

    /// When the descriptor was last used, if it could be evicted now.
    var evictableSince: UInt64? {
        slot.withLock { $0.descriptor >= 0 && $0.users == 0 && $0.pins == 0 && !$0.borrowed ? $0.lastUse : nil }
    }

    /// Closes the descriptor if nothing uses it, keeping the file handle.
    /// Returns whether it did; a filesystem without handles keeps it open.
    func evict() -> Bool {
        let closed: Int32? = slot.withLock { slot in
            guard slot.descriptor >= 0, slot.users == 0, slot.pins == 0, !slot.borrowed else { return nil }
            if slot.handle == nil {
                guard let handle = try? FileHandle(of: FileDescriptor(rawValue: slot.descriptor)) else { return nil }
                slot.handle = handle
            }
            defer { slot.descriptor = -1 }
            return slot.descriptor
        }
        guard let closed else { return false }
        FileDescriptor(rawValue: closed).closeQuietly()
        pool.closed()
        return true
    }

    deinit {
        let (descriptor, retired, borrowed) = slot.withLock { ($0.descriptor, $0.retired, $0.borrowed) }
        for old in retired { FileDescriptor(rawValue: old).closeQuietly() }
        if descriptor >= 0 && !borrowed {
            FileDescriptor(rawValue: descriptor).closeQuietly()
            pool.closed()
        }
    }
}
