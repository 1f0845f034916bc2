import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// The mount's sparse members (docs/DESIGN.md, "Block sharing without
/// reflinks"): their live files (`SparseMemberFile`) keyed by the anchor's
/// identity, which members name each base, and the bases' links
/// (`clone-anchors/b<ino>`). Part of `LinkedClones`, which makes members
/// sparse at their first write and answers for them through `CloneBackend`.
///
/// Its lock guards memory only (a leaf: taken under a data lock, never
/// around I/O but the opening of one member's descriptors).
///
/// A live file holds two descriptors (its anchor and its base). At most
/// `descriptorBound` of them are kept for files nobody is using: past it,
/// opening another lets go of the idle files used least recently (those
/// the table alone refers to: no request holds them), whose descriptors
/// close with them; the next use reopens them from the book.
final class SparseMembers: Sendable {
    /// New sparse members are made (a first write into a linked clone copies
    /// its blocks, not the file) unless the daemon runs with
    /// `PURGEFS_BLOCK_SHARING=0` (then a first write copies the whole file);
    /// maps an earlier mount made are honoured either way.
    static let makesSparse: Bool = getenv("PURGEFS_BLOCK_SHARING").map { String(cString: $0) != "0" } ?? true

    let maps: BlockMaps
    /// The state directory's `clone-anchors` (where the `b` links are).
    let anchors: FileDescriptor?
    /// The container's root, opened for real (`open_by_handle_at`).
    let root: FileDescriptor
    private let table: Mutex<Table>
    /// Any member is sparse: the fast path of every question reads only this.
    /// Stored only under the table's lock, from the table: a drop of the
    /// last member stored its "none" after a start beside it had stored
    /// "some", and every member then read its anchor's holes where it shares.
    private let active: Atomic<Bool>

    /// Descriptors kept open for idle members' files: a sixteenth of the
    /// open-files limit, at least 16 (taken from the reserve the inode
    /// descriptors leave, `DescriptorPool`).
    let descriptorBound: Int

    static func descriptorBound(openFilesLimit: UInt64) -> Int { max(Int(min(openFilesLimit, 1 << 30)) / 16, 16) }

    private struct Table {
        /// Each file owns its descriptors (closed when the last reference goes).
        var files: [EntryID: SparseMemberFile] = [:]
        /// When each file was last asked for (`tick`), for letting go of the idle ones.
        var lastUse: [EntryID: UInt64] = [:]
        var tick: UInt64 = 0
        /// The members naming each base (durable or pending).
        var members: [EntryID: Set<EntryID>] = [:]
        var baseOf: [EntryID: EntryID] = [:]

        mutating func used(_ id: EntryID) {
            tick += 1
            lastUse[id] = tick
        }
        /// The node the kernel knows each member by (while it does).
        var nodes: [EntryID: LinkedClones.WeakInode] = [:]
        /// Members purged while their node was known: kept until it is forgotten.
        var keptForNode: Set<EntryID> = []
    }

    /// Tests: runs at the end of each `drop`, where another member's start
    /// may come between the drop's change of the table and its return.
    private let afterDrop: (@Sendable () -> Void)?

    init(
        maps: BlockMaps, anchors: FileDescriptor?, root: FileDescriptor, openFilesLimit: UInt64 = ResourceLimits.openFiles,
        afterDrop: (@Sendable () -> Void)? = nil
    ) {
        self.maps = maps
        self.afterDrop = afterDrop
        descriptorBound = Self.descriptorBound(openFilesLimit: openFilesLimit)
        self.anchors = anchors
        self.root = root
        var table = Table()
        for (member, entry) in maps.book.durable {
            table.members[entry.map.base, default: []].insert(member)
            table.baseOf[member] = entry.map.base
        }
        active = Atomic(!table.baseOf.isEmpty)
        self.table = Mutex(table)
    }

    var isActive: Bool { active.load(ordering: .relaxed) }

    static func baseName(of base: EntryID) -> String { "b\(base.inode)" }

    /// Whether `id` is a sparse member.
    func has(_ id: EntryID) -> Bool {
        isActive && table.withLock { $0.baseOf[id] != nil }
    }

    /// Whether a map names `id` as its base (it must not be written in place).
    func isBase(_ id: EntryID) -> Bool {
        isActive && table.withLock { $0.members[id]?.isEmpty == false }
    }

    var count: Int { isActive ? table.withLock { $0.baseOf.count } : 0 }

    func members(of base: EntryID) -> [EntryID] {
        table.withLock { ($0.members[base] ?? []).sorted() }
    }

    /// Member `id`'s live file, opened the first time it is asked for (its
    /// anchor by its handle, its base by its link); nil when `id` is not
    /// sparse, and when its file cannot be opened (logged: `has` tells the
    /// two apart, and `SparseMemberViews` answers the second with `EIO`).
    func file(of id: EntryID) -> SparseMemberFile? {
        guard isActive else { return nil }
        // A rebase may move the member between reading its base and keeping
        // its file (its old link unlinked under the open): opened again on
        // the new base, never nil, which would read the anchor's holes.
        for _ in 0..<Self.openingAttempts {
            switch opening(id) {
            case .opened(let file): return file
            case .notSparse: return nil
            case .moved: continue
            }
        }
        Diagnostics.note("sparse clone \(id): its base moved under every open of its data")
        return nil
    }

    static let openingAttempts = 8

    private enum Opening {
        case opened(SparseMemberFile)
        case notSparse
        /// Rebased while it was being opened.
        case moved
    }

    private func opening(_ id: EntryID) -> Opening {
        let (known, base) = table.withLock { table in
            let known = table.files[id]
            if known != nil { table.used(id) }
            return (known, table.baseOf[id])
        }
        if let known { return .opened(known) }
        guard let base, let entry = maps.current(id) else { return .notSparse }

        /// `file` as the live file of `id`, unless another thread's came first.
        /// Dropped meanwhile (its map read before the drop): not kept, and
        /// nil, so nothing writes through a file its member no longer has.
        func keep(_ file: SparseMemberFile) -> Opening {
            table.withLock { table -> Opening in
                if let raced = table.files[id] {
                    table.used(id)
                    return .opened(raced)
                }
                guard let now = table.baseOf[id] else { return .notSparse }
                guard now == base else { return .moved }
                table.files[id] = file
                table.used(id)
                return .opened(file)
            }
        }
        func movedOrNotSparse() -> Opening {
            table.withLock { table in table.baseOf[id].map { $0 == base ? .notSparse : .moved } ?? .notSparse }
        }
        letGoOfIdleFiles(making: 1)
        do throws(Errno) {
            let anchor = try FileHandle(stored: (entry.handleType, entry.handle)).open(on: root, flags: O_RDWR)
            guard EntryID(try anchor.status()) == id else {
                anchor.closeQuietly()
                throw Errno(ESTALE)
            }
            // It owns its descriptors from here on (closing them if it throws, and when it goes).
            let baseFile: FileDescriptor
            do throws(Errno) { baseFile = try openBase(base) } catch {
                if case .moved = movedOrNotSparse() {
                    anchor.closeQuietly()
                    return .moved
                }
                // Its link gone or replaced behind the mount: never its anchor's holes where it shares.
                return keep(try SparseMemberFile.withoutBase(member: id, anchor: anchor, maps: maps, error: error))
            }
            return keep(try SparseMemberFile.open(member: id, anchor: anchor, base: baseFile, maps: maps))
        } catch {
            if case .moved = movedOrNotSparse() { return .moved }
            Diagnostics.note("sparse clone \(id): cannot open its data: \(error)")
            return .notSparse
        }
    }

    /// The base's link, open for reading, checked to be it.
    func openBase(_ base: EntryID) throws(Errno) -> FileDescriptor {
        guard let anchors else { throw Errno.noEntry }
        let file = try FileDescriptor.open(Self.baseName(of: base), in: anchors, flags: O_RDONLY | O_NOFOLLOW)
        guard EntryID(try file.status()) == base else {
            file.closeQuietly()
            throw Errno(ESTALE)
        }
        return file
    }

    /// Links `base` (open) as `b<ino>` unless it is, and syncs the directory:
    /// before any map naming it is journaled.
    func linkBase(_ base: FileDescriptor) throws(Errno) {
        guard let anchors else { throw Errno.ioError }
        let id = EntryID(try base.status())
        let name = Self.baseName(of: id)
        if let present = try? anchors.status(of: name), EntryID(present) == id { return }
        try? anchors.unlink(name)
        try base.link(as: name, in: anchors)
        try anchors.sync()
    }

    /// `file` started (its `start` record taken): it is live from now on.
    func started(_ file: SparseMemberFile, base: EntryID) {
        letGoOfIdleFiles(making: 1)
        table.withLock { table in
            table.files[file.member] = file
            table.used(file.member)
            table.members[base, default: []].insert(file.member)
            table.baseOf[file.member] = base
            active.store(true, ordering: .relaxed)
        }
    }

    // MARK: Nodes

    /// The kernel knows member `inode.key` by `inode`.
    func knowNode(_ inode: Inode) {
        table.withLock { table in
            if table.baseOf[inode.key] != nil { table.nodes[inode.key] = LinkedClones.WeakInode(inode: inode) }
        }
    }

    /// Whether the kernel still knows member `id`'s node.
    func isNodeKnown(_ id: EntryID) -> Bool {
        table.withLock { $0.nodes[id]?.inode != nil }
    }

    /// Member `id`, gone, is kept for its node (see `LinkedClones.dropSparseIfGone`).
    /// Never a member dropped meanwhile: its inode number, reused by a
    /// later member, would leave that one marked.
    func keep(_ id: EntryID) {
        table.withLock { table in
            if table.baseOf[id] != nil { table.keptForNode.insert(id) }
        }
    }

    func isKept(_ id: EntryID) -> Bool {
        table.withLock { $0.keptForNode.contains(id) }
    }

    /// Kept members whose node the kernel has forgotten since.
    func keptWithoutNode() -> [EntryID] {
        table.withLock { table in table.keptForNode.filter { table.nodes[$0]?.inode == nil }.sorted() }
    }

    /// Moves every member of `old` onto `copy` (the same bytes): `b<copy>`
    /// linked first, each member's `base` record made durable under its
    /// data lock (`lock`), then `b<old>` unlinked.
    func rebase(from old: EntryID, to copy: FileDescriptor, lock: (EntryID, () throws(Errno) -> Void) throws(Errno) -> Void) throws(Errno) {
        let members = members(of: old)
        guard !members.isEmpty else { return }
        try linkBase(copy)
        let newBase = EntryID(try copy.status())
        for member in members {
            let descriptor = try copy.reopen(flags: O_RDONLY)
            // Its file asked for, and the table changed, under its data lock:
            // a member dropped meanwhile is left dropped.
            try lock(member) { () throws(Errno) in
                guard let file = file(of: member) else {
                    descriptor.closeQuietly()
                    if has(member) { throw Errno.ioError }
                    return
                }
                try file.rebase(to: descriptor)
                table.withLock { table in
                    table.members[old]?.remove(member)
                    table.members[newBase, default: []].insert(member)
                    table.baseOf[member] = newBase
                }
            }
        }
        unlinkBaseIfUnnamed(old)
    }

    /// Forgets member `id`'s map: its file retired (it changes and records
    /// nothing more; its descriptors close when the last reference goes),
    /// `drop` journaled, then its base's link unlinked when no map names
    /// it. Under its data lock.
    func drop(_ id: EntryID) throws(Errno) {
        guard has(id) else { return }
        table.withLock { $0.files[id] }?.retire()
        if maps.dropRecorded(id) { try maps.commit(id) }
        let base = table.withLock { table -> EntryID? in
            let base = table.baseOf.removeValue(forKey: id)
            if let base { table.members[base]?.remove(id) }
            table.files[id] = nil
            table.lastUse[id] = nil
            table.nodes[id] = nil
            table.keptForNode.remove(id)
            active.store(!table.baseOf.isEmpty, ordering: .relaxed)
            return base
        }
        if let base { unlinkBaseIfUnnamed(base) }
        afterDrop?()
    }

    /// Member `id` flattened (its map dropped durably by `SparseMemberFile.flatten`).
    func flattened(_ id: EntryID) {
        try? drop(id)
    }

    /// Lets go of the idle files used least recently until `count` more
    /// fit in `descriptorBound` (two descriptors each). A file is idle when
    /// the table holds the only reference to it (no request is using it, and
    /// none can take it without the table's lock) and no change of it
    /// failed half-way (that state lives in its view only). Their
    /// descriptors close as they go, outside the lock.
    func letGoOfIdleFiles(making count: Int) {
        let kept = descriptorBound / 2 - count
        var released: [SparseMemberFile] = []
        table.withLock { table in
            guard table.files.count > kept else { return }
            for id in table.files.keys.sorted(by: { (table.lastUse[$0] ?? 0) < (table.lastUse[$1] ?? 0) }) {
                guard table.files.count > kept else { break }
                guard var file = table.files.removeValue(forKey: id) else { continue }
                if isKnownUniquelyReferenced(&file), !file.snapshot.failed {
                    table.lastUse[id] = nil
                    released.append(file)
                } else {
                    table.files[id] = file
                }
            }
        }
        released.removeAll()
    }

    /// The original's times are about to be set through the mount (or it is
    /// opened): the base's stamp now, for `touched`. Nil when no map names it.
    func touching(_ base: EntryID, status: () -> stat?) -> BaseStamp? {
        guard isBase(base), let status = status() else { return nil }
        return BaseStamp(status)
    }

    /// The original's times were set through the mount: every member of
    /// `base` stamped `before` is stamped as the base is now
    /// (`SparseMemberFile.restamp`), each under its data lock (`lock`).
    func touched(_ base: EntryID, before: BaseStamp, after: BaseStamp, lock: (EntryID, () throws(Errno) -> Void) throws(Errno) -> Void) {
        guard after != before else { return }
        for member in members(of: base) {
            guard let file = file(of: member) else { continue }
            do { try lock(member) { () throws(Errno) in try file.restamp(from: before, to: after) } } catch {
                Diagnostics.note("sparse clone \(member): cannot stamp its base anew: \(error)")
            }
        }
    }

    /// Live files (tests: how many hold descriptors).
    var liveFiles: Int { table.withLock { $0.files.count } }

    private func unlinkBaseIfUnnamed(_ base: EntryID) {
        let unnamed = table.withLock { table -> Bool in
            guard table.members[base]?.isEmpty ?? true else { return false }
            table.members[base] = nil
            return true
        }
        guard unnamed, let anchors else { return }
        let name = Self.baseName(of: base)
        guard let status = try? anchors.status(of: name), EntryID(status) == base else { return }
        try? anchors.unlink(name)
    }

    /// Bytes `id` reads from its base (`clone_savings`, `shared`).
    func sharedBytes(of id: EntryID) -> UInt64? {
        guard has(id), let file = file(of: id) else { return nil }
        let view = file.snapshot
        return min(view.map.sharedBlockCount * BlockMap.blockSize, view.size)
    }

    /// Syncs every live member with pending records and commits the book (unmount).
    func commitAll(lock: (EntryID, () throws(Errno) -> Void) throws(Errno) -> Void) {
        let files = table.withLock { Array($0.files.values) }
        for file in files where !maps.book.pendingRecords(of: file.member).isEmpty {
            do { try lock(file.member) { () throws(Errno) in if !file.isRetired { try file.sync() } } } catch {
                Diagnostics.note("sparse clone \(file.member): cannot sync its map: \(error)")
            }
        }
    }

    // MARK: Mount

    /// The `b` links present, by identity, with the stamps of their bases now.
    func baseLinks() -> [EntryID: (name: String, stamp: BaseStamp)] {
        guard let anchors, let stream = try? DirectoryStream(anchors) else { return [:] }
        var links: [EntryID: (name: String, stamp: BaseStamp)] = [:]
        while let entry = try? stream.next() {
            guard !entry.isDotOrDotDot else { continue }
            let name = String(cString: entry.name)
            guard name.hasPrefix("b"), let status = try? anchors.status(of: name) else { continue }
            links[EntryID(status)] = (name, BaseStamp(status))
        }
        return links
    }

    /// Replays the durable book against the files (`BlockShareCheck.replay`,
    /// then `BlockMaps.repair`), and returns what the check then finds.
    /// `linkedMembers`: members the linked registry still has.
    func replay(linkedMembers: Set<EntryID>) -> [BlockShareCheck.Finding] {
        let book = maps.book
        guard !book.durable.isEmpty || !baseLinks().isEmpty else { return [] }
        let links = baseLinks()
        let repairs = BlockShareCheck.replay(
            book: book, anchors: readAnchors(book), linkedMembers: linkedMembers, baseLinks: Set(links.keys),
            baseStamps: links.mapValues(\.stamp))
        do {
            try maps.repair(repairs, anchor: { (member) throws(Errno) in try openAnchor(member, in: book) }, unlinkBase: { (base) throws(Errno) in
                if let name = links[base]?.name, let anchors { try anchors.unlink(name) }
            })
        } catch {
            Diagnostics.note("block maps: a repair at mount failed: \(error)")
        }
        table.withLock { table in
            table = Table()
            for (member, entry) in maps.book.durable {
                table.members[entry.map.base, default: []].insert(member)
                table.baseOf[member] = entry.map.base
            }
            active.store(!table.baseOf.isEmpty, ordering: .relaxed)
        }
        return check()
    }

    /// What `BlockShareCheck.findings` says of the durable maps and the files now.
    func check() -> [BlockShareCheck.Finding] {
        let book = maps.book
        let links = baseLinks()
        return BlockShareCheck.findings(
            maps: book.durable.mapValues(\.map), anchors: readAnchors(book), baseLinks: Set(links.keys),
            baseStamps: links.mapValues(\.stamp))
    }

    private func readAnchors(_ book: BlockMapBook) -> [EntryID: BlockShareCheck.Anchor] {
        var anchors: [EntryID: BlockShareCheck.Anchor] = [:]
        for member in book.durable.keys {
            guard let file = try? openAnchor(member, in: book) else { continue }
            defer { file.closeQuietly() }
            anchors[member] = try? BlockShareCheck.Anchor(reading: file)
        }
        return anchors
    }

    private func openAnchor(_ member: EntryID, in book: BlockMapBook) throws(Errno) -> FileDescriptor {
        guard let entry = book.durable[member] else { throw Errno.noEntry }
        let file = try FileHandle(stored: (entry.handleType, entry.handle)).open(on: root, flags: O_RDWR)
        guard EntryID(try file.status()) == member else {
            file.closeQuietly()
            throw Errno(ESTALE)
        }
        return file
    }
}
