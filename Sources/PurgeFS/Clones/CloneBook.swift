import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// Clones on the reflink backend: which files share data (the registry, in
/// the state directory), where each member's data lies (its extents, from
/// `FIEMAP`), and the charges that count each group's data once in the ledger.
///
/// Locks: a group's work (reopening its members, `FIEMAP`, the journal's
/// `fdatasync`, `FICLONE` into it) runs under that group's lock (`groups`),
/// never under the book's, which guards memory only: a write to a file of
/// another group, or of none, never waits for it. Order: namespace stripes,
/// then a group's lock, then the registry store's, then the book's, then
/// `ContainerState`'s.
final class CloneBook: Sendable {
    private let guarded: Mutex<Book>
    /// One group's work at a time, by group id.
    private let groups = KeyedLocks<UInt64>()

    /// Everything behind the book's lock.
    private struct Book {
        var registry: CloneRegistry
        var extents: [EntryID: [FileExtent]] = [:]
        var shared: [EntryID: UInt64] = [:]
    }
    /// Any clone exists: what every write, close and unlink reads first.
    private let active = Atomic<Bool>(false)

    private let directory: StateDirectory
    private let store: RegistryStore<CloneRegistry>
    /// The container's root, to reopen members by handle.
    private let root: FileDescriptor
    /// The ledger it charges.
    let state: ContainerState

    /// For a mount whose probe found reflinks (`CloneBackends.choose`).
    init(state: ContainerState, directory: StateDirectory, root: FileDescriptor) {
        self.state = state
        self.directory = directory
        // open_by_handle_at(2) wants a descriptor opened for real, not O_PATH.
        self.root = (try? root.reopen(flags: O_RDONLY | O_DIRECTORY)) ?? root
        store = RegistryStore(directory: directory, named: CloneRegistry.fileName)
        let registry = store.load()
        guarded = Mutex(Book(registry: registry))
        active.store(!registry.members.isEmpty, ordering: .relaxed)
    }

    /// Whether the state directory's filesystem clones: one scratch file cloned.
    static func probe(_ directory: StateDirectory) -> Bool {
        let source = "clone-probe.source", destination = "clone-probe.destination"
        defer {
            try? directory.descriptor.unlink(source)
            try? directory.descriptor.unlink(destination)
        }
        do {
            let a = try FileDescriptor.open(source, in: directory.descriptor, flags: O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: 0o600)
            defer { a.closeQuietly() }
            let block = [UInt8](repeating: 0x5A, count: 4096)
            _ = try block.withUnsafeBytes { buffer in Result { () throws(Errno) -> Int in try a.write(buffer, at: 0) } }.get()
            let b = try FileDescriptor.open(destination, in: directory.descriptor, flags: O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: 0o600)
            defer { b.closeQuietly() }
            try b.clone(from: a)
            return true
        } catch {
            return false
        }
    }

    // MARK: Reads

    private var isActive: Bool { active.load(ordering: .relaxed) }
    func contains(_ id: EntryID) -> Bool { isActive && guarded.withLock { book in book.registry.contains(id) } }
    func contentID(of id: EntryID) -> UInt64 { isActive ? guarded.withLock { book in book.registry.contentID(of: id) } : id.inode }
    func sharedBytes(of id: EntryID) -> UInt64 { isActive ? guarded.withLock { book in book.shared[id] ?? 0 } : 0 }

    // MARK: Changes

    /// Makes `destination` (open for writing, empty) share all of `source`'s
    /// data. The pair is registered (and saved) before the clone is made, so
    /// a daemon killed in between leaves a registry that knows at least as
    /// much as the disk: a member that turns out to share nothing is dropped
    /// at the next mount. Throws what `FICLONE` said; nothing is registered then.
    /// Holds the group's lock only: files of other groups, and files in none,
    /// never wait for the `FICLONE`.
    func clone(_ source: FileDescriptor, _ sourceID: EntryID, into destination: FileDescriptor, _ destinationID: EntryID,
               ) throws(Errno) {
        let sourceHandle = try FileHandle(of: source), destinationHandle = try FileHandle(of: destination)
        let group = guarded.withLock { book in
            book.registry.addClone(source: sourceID, sourceHandle: sourceHandle.stored,
                                   destination: destinationID, destinationHandle: destinationHandle.stored)
            active.store(true, ordering: .relaxed)
            return book.registry.members[destinationID]!.group
        }
        try groups.withLock(group) { () throws(Errno) in
            persist()
            do throws(Errno) {
                try destination.clone(from: source)
            } catch {
                // Rare: unregistered again (a pair of two is dissolved).
                guarded.withLock { book in
                    _ = book.registry.remove(destinationID)
                    book.extents[destinationID] = nil
                    book.shared[destinationID] = nil
                }
                persist()
                throw error
            }
            guarded.withLock { book in
                book.extents[sourceID] = nil
                book.extents[destinationID] = nil
            }
            settle(group)
        }
    }

    /// A member's size or data changed (write, truncate, allocation).
    /// Returns false when `id` is no member (the caller records it as usual).
    func changed(_ id: EntryID) -> Bool {
        guard isActive, let group = guarded.withLock({ book in book.registry.members[id]?.group }) else { return false }
        return (try? groups.withLock(group) { () throws(Errno) -> Bool in
            let member = guarded.withLock { book -> Bool in
                guard book.registry.members[id]?.group == group else { return false }
                book.extents[id] = nil
                book.registry.modified(id)
                return true
            }
            guard member else { return false }
            persist()
            settle(group)
            return true
        }) ?? false
    }

    /// A file may be gone (unlinked and closed): forgets it, and charges the
    /// rest of its group anew.
    func forgetIfGone(_ id: EntryID) {
        guard isActive, let group = guarded.withLock({ book in book.registry.members[id]?.group }) else { return }
        try? groups.withLock(group) { () throws(Errno) in
            guard guarded.withLock({ book in book.registry.members[id]?.group }) == group,
                  !state.read({ ledger, _ in ledger.contains(id) })
            else { return }
            forget(id)
            settle(group)
        }
    }

    /// At mount, after the walk: every member's extents read afresh, members
    /// gone while unmounted forgotten, every group charged. Nothing else
    /// runs yet, so no group lock is taken.
    func settleAll() {
        // A snapshot of what was loaded first: the journal starts empty
        // (a line a crash cut short is never appended to).
        if store.hasStored {
            let registry = guarded.withLock { book in book.registry }
            do { try store.fold(registry) } catch { Diagnostics.note("cannot save the clone registry: \(error)") }
        }
        let loaded = guarded.withLock { book in Array(book.registry.members.keys) }
        for id in loaded where !state.read({ ledger, _ in ledger.contains(id) }) { forget(id) }
        for group in guarded.withLock({ book in Set(book.registry.members.values.map(\.group)) }) { settle(group) }
        // A member sharing nothing (modified all over, or a clone the
        // daemon did not live to make) leaves its group.
        let alone = guarded.withLock { book in
            book.registry.members.filter { book.shared[$0.key] == 0 }.map { ($0.key, $0.value.group) }
        }
        for (id, group) in alone where guarded.withLock({ book in book.registry.contains(id) }) {
            forget(id)
            settle(group)
        }
    }

    // MARK: Under the group's lock (the book's lock only around memory)

    /// Appends the registry's changes to its journal, synced, under the
    /// store's lock but not the book's: readers of the book never wait for it.
    private func persist() {
        do {
            try store.save {
                guarded.withLock { book in
                    active.store(!book.registry.members.isEmpty, ordering: .relaxed)
                    return (book.registry.takeChanges(), book.registry)
                }
            }
        } catch {
            Diagnostics.note("cannot save the clone registry: \(error)")
        }
    }

    /// Forgets a member. A member left alone in its group leaves it too,
    /// and is charged as a plain file again.
    private func forget(_ id: EntryID) {
        let alone: [(EntryID, CloneRegistry.Member)] = guarded.withLock { book in
            let group = book.registry.group(of: id).compactMap { other in book.registry.members[other].map { (other, $0) } }
            _ = book.registry.remove(id)
            book.extents[id] = nil
            book.shared[id] = nil
            let alone = group.filter { $0.0 != id && !book.registry.contains($0.0) }
            for (other, _) in alone {
                book.extents[other] = nil
                book.shared[other] = nil
            }
            return alone
        }
        persist()
        for (other, member) in alone {
            let handle = FileHandle(stored: (member.handleType, member.handle))
            guard let file = try? handle.open(on: root, flags: O_RDONLY) else { continue }
            defer { file.closeQuietly() }
            guard let status = try? file.status(), EntryID(status) == other else { continue }
            do {
                try state.withLedger { (ledger, _) throws(PurgeCoreError) in
                    try ledger.update(other, size: UInt64(status.st_size), allocated: ContainerState.allocated(status), cloneSavings: 0)
                }
            } catch {
                Diagnostics.note("accounting drifted from the backing store: \(error)")
            }
        }
    }

    /// Reads missing extents (reopening members by handle, outside the
    /// book's lock), then charges the group: each physical byte once, in the
    /// ledger and in `shared`.
    private func settle(_ group: UInt64) {
        var members: [(EntryID, [FileExtent], UInt64?)] = []
        for id in guarded.withLock({ book in book.registry.members(ofGroup: group) }) {
            // Gone from the container (and not held open): no longer a member.
            if !state.read({ ledger, _ in ledger.contains(id) }) {
                forget(id)
                continue
            }
            var size: UInt64?
            var extents = guarded.withLock { book in book.extents[id] }
            if extents == nil, let member = guarded.withLock({ book in book.registry.members[id] }),
               let (found, status) = readMember(id, member) {
                extents = found
                size = UInt64(status.st_size)
                guarded.withLock { book in book.extents[id] = found }
            }
            guard let found = extents else {
                // Gone, or no longer reachable: no longer a member.
                forget(id)
                continue
            }
            members.append((id, found, size))
        }
        // Members forgotten on the way may have dissolved the group.
        members = guarded.withLock { book in members.filter { book.registry.contains($0.0) } }
        members = state.chargingOrder(members) { $0.0 }
        let charges = CloneCharges(members: members.map(\.1)).charges
        guarded.withLock { book in
            for (i, (id, _, _)) in members.enumerated() where book.registry.contains(id) { book.shared[id] = charges[i].shared }
        }
        for (i, (id, _, size)) in members.enumerated() {
            let charge = charges[i]
            do {
                try state.withLedger { (ledger, _) throws(PurgeCoreError) in
                    let current = try ledger.file(id).size
                    try ledger.update(id, size: size ?? current, allocated: charge.charged, cloneSavings: charge.savings)
                }
            } catch {
                Diagnostics.note("accounting drifted from the backing store: \(error)")
            }
        }
    }

    /// A member reopened by its handle (checked against its identity): its
    /// extents (`FIEMAP_FLAG_SYNC`: its dirty pages are flushed) and status.
    private func readMember(_ id: EntryID, _ member: CloneRegistry.Member) -> ([FileExtent], stat)? {
        let handle = FileHandle(stored: (member.handleType, member.handle))
        let file: FileDescriptor
        do { file = try handle.open(on: root, flags: O_RDONLY) } catch {
            Diagnostics.note("clone \(id): cannot reopen by handle: \(error)")
            return nil
        }
        defer { file.closeQuietly() }
        do {
            let status = try file.status()
            guard EntryID(status) == id else { return nil }
            return (try file.extents(), status)
        } catch {
            Diagnostics.note("clone \(id): cannot read extents: \(error)")
            return nil
        }
    }
}
