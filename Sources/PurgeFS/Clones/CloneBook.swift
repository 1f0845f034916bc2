import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// Clones on the reflink backend: which files share data (the registry, in
/// the state directory), where each member's data lies (its extents, from
/// `FIEMAP`), and the charges that count each group's data once in the ledger.
///
/// Lock order: namespace stripes, then this lock, then `ContainerState`'s.
final class CloneBook: Sendable {
    private let guarded: Mutex<Book>

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
    func clone(_ source: FileDescriptor, _ sourceID: EntryID, into destination: FileDescriptor, _ destinationID: EntryID,
               ) throws(Errno) {
        let sourceHandle = try FileHandle(of: source), destinationHandle = try FileHandle(of: destination)
        try guarded.withLock { (book) throws(Errno) in
            let before = book.registry
            book.registry.addClone(source: sourceID, sourceHandle: sourceHandle.stored,
                              destination: destinationID, destinationHandle: destinationHandle.stored)
            save(&book)
            do throws(Errno) {
                try destination.clone(from: source)
            } catch {
                // Rare: the whole registry is written again, as it was.
                book.registry = before
                active.store(!book.registry.members.isEmpty, ordering: .relaxed)
                do { try store.fold(book.registry) } catch { Diagnostics.note("cannot save the clone registry: \(error)") }
                throw error
            }
            book.extents[sourceID] = nil
            book.extents[destinationID] = nil
            settle(group: book.registry.group(of: sourceID), in: &book)
        }
    }

    /// A member's size or data changed (write, truncate, allocation).
    /// Returns false when `id` is no member (the caller records it as usual).
    func changed(_ id: EntryID) -> Bool {
        guard isActive else { return false }
        return guarded.withLock { book in
            guard book.registry.contains(id) else { return false }
            book.extents[id] = nil
            if book.registry.modified(id) { save(&book) }
            settle(group: book.registry.group(of: id), in: &book)
            return true
        }
    }

    /// A file may be gone (unlinked and closed): forgets it, and charges the
    /// rest of its group anew.
    func forgetIfGone(_ id: EntryID) {
        guard isActive else { return }
        guarded.withLock { book in
            guard book.registry.contains(id), !state.read({ ledger, _ in ledger.contains(id) }) else { return }
            let group = book.registry.group(of: id)
            forget(id, in: &book)
            save(&book)
            settle(group: group.filter { book.registry.contains($0) }, in: &book)
        }
    }

    /// At mount, after the walk: every member's extents read afresh, members
    /// gone while unmounted forgotten, every group charged.
    func settleAll() {
        guarded.withLock { book in
            // A snapshot of what was loaded first: the journal starts empty
            // (a line a crash cut short is never appended to).
            if store.hasStored {
                do { try store.fold(book.registry) } catch { Diagnostics.note("cannot save the clone registry: \(error)") }
            }
            let before = book.registry
            for id in book.registry.members.keys where !state.read({ ledger, _ in ledger.contains(id) }) { forget(id, in: &book) }
            for id in before.members.keys where book.registry.contains(id) { settle(group: book.registry.group(of: id), in: &book) }
            // A member sharing nothing (modified all over, or a clone the
            // daemon did not live to make) leaves its group.
            for id in book.registry.members.keys where book.registry.contains(id) && book.shared[id] == 0 {
                let group = book.registry.group(of: id)
                forget(id, in: &book)
                settle(group: group.filter { book.registry.contains($0) }, in: &book)
            }
            if book.registry != before { save(&book) }
        }
    }

    // MARK: Under the lock

    /// Forgets a member. A member left alone in its group leaves it too,
    /// and is charged as a plain file again.
    private func forget(_ id: EntryID, in book: inout Book) {
        let before = book.registry
        for left in book.registry.remove(id) where !book.registry.contains(left) {
            book.extents[left] = nil
            book.shared[left] = nil
        }
        book.extents[id] = nil
        book.shared[id] = nil
        for (other, member) in before.members where other != id && !book.registry.contains(other) {
            book.extents[other] = nil
            book.shared[other] = nil
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

    /// Reads missing extents (reopening members by handle), then charges the
    /// group: each physical byte once, in the ledger and in `shared`.
    private func settle(group: [EntryID], in book: inout Book) {
        var members: [(EntryID, [FileExtent], UInt64?)] = []
        for id in group {
            var size: UInt64?
            // Gone from the container (and not held open): no longer a member.
            if !state.read({ ledger, _ in ledger.contains(id) }) {
                forget(id, in: &book)
                save(&book)
                continue
            }
            if book.extents[id] == nil {
                if let (found, status) = readMember(id, in: book) {
                    book.extents[id] = found
                    size = UInt64(status.st_size)
                }
            }
            guard let found = book.extents[id] else {
                // Gone, or no longer reachable: no longer a member.
                forget(id, in: &book)
                save(&book)
                continue
            }
            members.append((id, found, size))
        }
        // Members forgotten on the way may have dissolved the group.
        members = members.filter { book.registry.contains($0.0) }
        members = state.chargingOrder(members) { $0.0 }
        let charges = CloneCharges(members: members.map(\.1)).charges
        for (i, (id, _, size)) in members.enumerated() {
            book.shared[id] = charges[i].shared
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

    /// A member reopened by its handle (checked against its identity): its extents and status.
    private func readMember(_ id: EntryID, in book: Book) -> ([FileExtent], stat)? {
        guard let member = book.registry.members[id] else { return nil }
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

    private func save(_ book: inout Book) {
        active.store(!book.registry.members.isEmpty, ordering: .relaxed)
        do {
            try store.save(&book.registry)
        } catch {
            Diagnostics.note("cannot save the clone registry: \(error)")
        }
    }
}
