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
/// keeps its descriptor.
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
    private let pool: DescriptorPool
    private let slot: Mutex<Slot>
    /// The files open on it and whether its data is shared with other files
    /// (linked clones): the clone backend's, and the modification bracket's.
    let sharing = InodeSharing()

    private struct Slot {
        /// The descriptor, or -1 while evicted.
        var descriptor: Int32
        /// Operations using the descriptor now, plus open files of this inode.
        var users: Int32 = 0
        var lastUse: UInt64 = 0
        /// Taken at the first eviction.
        var handle: FileHandle?
        /// The backing file's identity, which a reopened handle must have.
        var backing: EntryID
        /// Descriptors replaced while in use, closed when the users are done.
        var retired: [Int32] = []
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
        let descriptor = try acquire()
        defer { release() }
        return try body(descriptor)
    }

    /// Keeps the descriptor from eviction while a file of this inode is open:
    /// an unlinked file cannot be reopened by its handle.
    func pin() throws(Errno) { _ = try acquire() }
    func unpin() { release() }

    private func acquire() throws(Errno) -> FileDescriptor {
        let tick = pool.tick()
        let (current, handle, backing): (Int32, FileHandle?, EntryID) = slot.withLock { slot in
            if slot.descriptor >= 0 {
                slot.users += 1
                slot.lastUse = tick
            }
            return (slot.descriptor, slot.handle, slot.backing)
        }
        if current >= 0 { return FileDescriptor(rawValue: current) }
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
        return FileDescriptor(rawValue: descriptor)
    }

    private func release() {
        let retired: [Int32] = slot.withLock { slot in
            slot.users -= 1
            guard slot.users == 0, !slot.retired.isEmpty else { return [] }
            defer { slot.retired = [] }
            return slot.retired
        }
        for descriptor in retired { FileDescriptor(rawValue: descriptor).closeQuietly() }
    }

    /// The backing file's identity (the key, but for a linked clone).
    var backing: EntryID { slot.withLock { $0.backing } }

    /// Points the inode at another backing file: `descriptor` (`O_PATH`, taken
    /// over) of identity `backing`. Users of the old descriptor finish with it.
    func repoint(to descriptor: FileDescriptor, backing: EntryID) {
        let (old, closeNow): (Int32, Bool) = slot.withLock { slot in
            let old = slot.descriptor
            slot.descriptor = descriptor.rawValue
            slot.backing = backing
            slot.handle = nil
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
        slot.withLock { $0.descriptor >= 0 && $0.users == 0 ? $0.lastUse : nil }
    }

    /// Closes the descriptor if nothing uses it, keeping the file handle.
    /// Returns whether it did; a filesystem without handles keeps it open.
    func evict() -> Bool {
        let closed: Int32? = slot.withLock { slot in
            guard slot.descriptor >= 0, slot.users == 0 else { return nil }
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
        let (descriptor, retired) = slot.withLock { ($0.descriptor, $0.retired) }
        for old in retired { FileDescriptor(rawValue: old).closeQuietly() }
        if descriptor >= 0 {
            FileDescriptor(rawValue: descriptor).closeQuietly()
            pool.closed()
        }
    }
}
