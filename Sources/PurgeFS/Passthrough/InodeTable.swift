import PurgeCore
import Glibc
import PurgeSys
import Synchronization

/// Every inode the kernel holds a reference to, with its lookup count.
///
/// One entry per backing inode (by device and inode number), so hard links
/// share a node and a change through one name shows through the other at
/// once. Counts follow the FUSE rule: +1 for every entry replied (lookup,
/// create, mknod, mkdir, symlink, link, readdirplus), −n on forget; the entry
/// is erased at zero. Lookup and forget both run under the one lock, so a
/// lookup racing a forget either revives the entry or makes a new one.
final class InodeTable: Sendable {
    private struct Entry {
        let inode: Inode
        var lookups: UInt64
    }

    private struct Storage {
        var byID: [NodeID: Entry] = [:]
        var byKey: [EntryID: NodeID] = [:]
        var nextID: UInt64 = NodeID.root.rawValue + 1
    }

    private let storage = Mutex(Storage())
    let pool: DescriptorPool
    private let evicting = Atomic<Bool>(false)
    /// No sweep until the pool holds more than this: after a sweep that
    /// could not get back under the budget (its descriptors in use), the
    /// next waits for an eighth of the budget more, so requests over the
    /// budget do not each sweep the whole table.
    private let nextSweep = Atomic<Int>(0)

    /// Installs the root; its count never reaches zero during the session.
    /// The table owns `descriptor` from now on.
    init(root descriptor: FileDescriptor, status: stat, pool: DescriptorPool) {
        self.pool = pool
        let key = EntryID(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
        let root = Inode(id: .root, descriptor: descriptor, key: key, backing: key, fileType: status.st_mode & S_IFMT, pool: pool)
        _ = try? root.pin()  // the root's descriptor is never evicted
        storage.withLock { table in
            table.byID[.root] = Entry(inode: root, lookups: 1 << 62)
            table.byKey[key] = .root
        }
    }

    /// The inode behind `id`. An unknown ID is a bug in the lookup counting
    /// (ours or the kernel's), never a user error, so it traps.
    func inode(_ id: NodeID) -> Inode {
        guard let inode = storage.withLock({ $0.byID[id]?.inode }) else {
            fatalError("purgefs: the kernel used \(id), which is not in the inode table")
        }
        if mayEvict { evictIdleDescriptors() }
        return inode
    }

    /// Counts one more reference to the file `key` (the backing file's own
    /// identity but for a linked clone) whose backing file is open at
    /// `descriptor` with attributes `status`. If the file is known already,
    /// the new descriptor is closed and the known inode returned.
    func remember(descriptor: FileDescriptor, status: stat, key: EntryID) -> (inode: Inode, isNew: Bool) {
        let (inode, duplicate) = storage.withLock { table -> (Inode, Bool) in
            if let id = table.byKey[key] {
                table.byID[id]!.lookups += 1
                return (table.byID[id]!.inode, true)
            }
            let id = NodeID(table.nextID)
            table.nextID += 1
            let inode = Inode(id: id, descriptor: descriptor, key: key, backing: EntryID(status), fileType: status.st_mode & S_IFMT, pool: pool)
            table.byID[id] = Entry(inode: inode, lookups: 1)
            table.byKey[key] = id
            return (inode, false)
        }
        // A known inode whose descriptor was evicted takes the fresh one: it
        // names the file now under this identity, even if the old one is gone.
        if duplicate && !inode.adopt(descriptor) { descriptor.closeQuietly() }
        if mayEvict { evictIdleDescriptors() }
        return (inode, !duplicate)
    }

    /// Drops `count` references; erases the entry at zero (its descriptor
    /// closes when the last in-flight user lets go of the `Inode`).
    func forget(_ id: NodeID, count: UInt64) {
        let erased: Inode? = storage.withLock { table in
            guard let entry = table.byID[id] else {
                fatalError("purgefs: the kernel forgot \(id), which is not in the inode table")
            }
            precondition(entry.lookups >= count, "purgefs: lookup count of \(id) would drop below zero")
            let remaining = entry.lookups - count
            if remaining > 0 {
                table.byID[id]!.lookups = remaining
                return nil
            }
            table.byID[id] = nil
            table.byKey[entry.inode.key] = nil
            return entry.inode
        }
        _ = erased  // released outside the lock: closing a descriptor can block
    }

    /// The node the kernel knows the backing file `id` by, if it knows it.
    func node(for id: EntryID) -> NodeID? {
        storage.withLock { $0.byKey[id] }
    }

    /// Every node the kernel knows, with its inode (a snapshot).
    func all() -> [(node: NodeID, inode: Inode)] {
        storage.withLock { table in table.byID.map { ($0.key, $0.value.inode) } }
    }

    /// The inode of file `id`, if the kernel knows it.
    func existing(_ id: EntryID) -> Inode? {
        storage.withLock { table in table.byKey[id].flatMap { table.byID[$0]?.inode } }
    }

    private var mayEvict: Bool { pool.isOverBudget && pool.count > nextSweep.load(ordering: .relaxed) }

    /// Closes the descriptors of the least recently used idle inodes until
    /// the pool is back to three quarters of its budget. One thread at a
    /// time; the table's lock is held only to copy its inodes.
    private func evictIdleDescriptors() {
        guard evicting.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else { return }
        defer { evicting.store(false, ordering: .releasing) }
        guard let root = storage.withLock({ $0.byID[.root]?.inode }),
              root.withDescriptorQuietly({ pool.canReopen(sample: $0) }) == true
        else { return }
        let inodes = storage.withLock { table in table.byID.values.map(\.inode) }
        var candidates = inodes.compactMap { inode in inode.evictableSince.map { (inode, $0) } }
        candidates.sort { $0.1 < $1.1 }
        let target = pool.budget * 3 / 4
        for (inode, _) in candidates where inode.id != .root {
            if pool.count <= target { break }
            _ = inode.evict()
        }
        let left = pool.count
        nextSweep.store(left > pool.budget ? left + max(pool.budget / 8, 1) : 0, ordering: .relaxed)
    }

    /// How many inodes the table holds (the root included).
    var count: Int { storage.withLock { $0.byID.count } }
}
