import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// The power-loss simulation's observer (`purgefs crash`): it keeps what a
/// crash now would undo, as the handlers announce it, in a `CrashModel`,
/// with what it needs to undo it:
///
/// - before a file's data changes (`willChangeData`), the bytes of its synced
///   version that the change overwrites or cuts, copied once into its undo
///   file `crash/u<dev>.<ino>` in the state directory, and the file's handle
///   (`name_to_handle_at`) to reach it again; dropped at its sync (`synced`);
/// - before a name goes (`beforeRemove`), a hard link to it, `crash/k<n>`
///   (a directory, empty by then, is remembered by mode and owner), and the
///   handles of the directories the journal names; dropped when a sync of
///   the directory commits the change (`directorySynced`).
///
/// `crash` (`CrashRecorder+Crash`) undoes it all. Its lock is held across
/// the copy of what a change overwrites (bounded: the change's own range,
/// the whole synced file for a truncate to zero) and the links; nothing
/// else of ours is taken under it but `Inode`'s leaf locks, and it is
/// never taken by anything holding it (DESIGN "Who may wait for whom").
final class CrashRecorder: FileSystemObserver, Sendable {
    struct Book: Sendable {
        var model = CrashModel()
        var fileHandles: [EntryID: FileHandle] = [:]
        var directoryHandles: [EntryID: FileHandle] = [:]
        /// Kept links made by `beforeRemove`, waiting for their `removed`.
        var pendingKept: [Place: NameChange.Kept] = [:]
        var nextKept: UInt64 = 1
        /// Whose each kept link is, and how many each file has: the mount
        /// shows a file's link count without them.
        var keptOwner: [UInt64: EntryID] = [:]
        var keptCount: [EntryID: UInt32] = [:]

        mutating func kept(_ number: UInt64, of id: EntryID) {
            keptOwner[number] = id
            keptCount[id, default: 0] += 1
        }

        /// Forgets kept link `number`; the caller unlinks it.
        mutating func dropKept(_ number: UInt64) {
            guard let id = keptOwner.removeValue(forKey: number), let count = keptCount[id] else { return }
            keptCount[id] = count > 1 ? count - 1 : nil
        }
    }

    static let directoryName = "crash"
    let book = Mutex(Book())
    /// Kept links in all: while none, `presented` takes no lock.
    let keptLinks = Atomic<Int>(0)
    /// Bumped by every crash: names the undo files of each era.
    let era = Atomic<UInt64>(0)
    /// The first handle number of the current era (`FileHandleID`): an open
    /// file numbered below it was opened before the last crash and answers
    /// `EIO` (`CrashEra`).
    private let eraFirstHandle = Atomic<UInt64>(0)
    /// `crash` in the state directory: undo files and kept links. Emptied at mount.
    let keep: FileDescriptor?
    let inodes: InodeTable
    /// What the last crash undid, one line each (`user.purgefs.last_crash`).
    let lastReport = Mutex<[String]>([])

    /// `enabled`: the mount's `crashable` option; without it the recorder
    /// is not among the observers and `keep` is nil.
    init(stateDirectory: StateDirectory, inodes: InodeTable, enabled: Bool) {
        self.inodes = inodes
        keep = enabled ? Self.openEmptied(in: stateDirectory.descriptor) : nil
        if enabled && keep == nil { Diagnostics.note("crash simulation off: cannot make \(Self.directoryName) in the state directory") }
    }

    /// Opens (making it if needed) the keep directory and removes what an
    /// earlier mount left there: a mount starts with nothing unsynced.
    private static func openEmptied(in state: FileDescriptor) -> FileDescriptor? {
        try? state.makeDirectory(directoryName, mode: 0o700)
        guard let directory = try? FileDescriptor.open(directoryName, in: state, flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW) else { return nil }
        emptyKeep(directory)
        return directory
    }

    static func emptyKeep(_ directory: FileDescriptor) {
        guard let stream = try? DirectoryStream(directory.reopen(flags: O_RDONLY | O_DIRECTORY)) else { return }
        var names: [[CChar]] = []
        while let entry = try? stream.next() {
            if !entry.isDotOrDotDot { names.append(CNames.copy(entry.name)) }
        }
        for name in names { try? directory.unlink(name) }
    }

    /// The current era, the number of crashes so far.
    var currentEra: UInt64 { era.load(ordering: .acquiring) }

    var firstHandleOfEra: FileHandleID { FileHandleID(rawValue: eraFirstHandle.load(ordering: .acquiring)) }

    /// A crash begins a new era: every file open so far (every handle
    /// numbered until now, an open under way included: its number was
    /// taken before its backing file was opened) answers `EIO` from now on.
    func beginEra() {
        era.add(1, ordering: .acquiringAndReleasing)
        eraFirstHandle.store(FileHandleID.next().rawValue, ordering: .releasing)
    }

    /// Whether the mount is `crashable`. Kernel passthrough is then off:
    /// a passed-through descriptor opened before a crash would not get its
    /// `EIO`, since its reads never reach the daemon.
    var isRecording: Bool { keep != nil }

    /// The undo file of `id` in crash era `era` (a write after a crash never
    /// mixes its saved bytes with those the crash is restoring).
    static func undoName(_ id: EntryID, era: UInt64) -> String { "u\(era).\(id.device).\(id.inode)" }
    static func keptName(_ number: UInt64) -> String { "k\(number)" }

    static func bytes(_ name: CName) -> [UInt8] { CNames.bytes(name) }

    /// `status` as the mount shows it: without the links kept for a crash
    /// (they live in the state directory, not in the container). The
    /// recorder's `ServingPolicy` answer.
    func presented(_ status: stat) -> stat {
        guard keptLinks.load(ordering: .acquiring) > 0, status.st_mode & S_IFMT != S_IFDIR else { return status }
        let kept = book.withLock { $0.keptCount[EntryID(status)] ?? 0 }
        guard kept > 0 else { return status }
        var shown = status
        shown.st_nlink = status.st_nlink > nlink_t(kept) ? status.st_nlink - nlink_t(kept) : 0
        return shown
    }

    /// Unlinks kept link `number` (under the book's lock).
    func unlinkKept(_ number: UInt64, in book: inout Book) {
        guard let keep else { return }
        if book.keptOwner[number] != nil { keptLinks.subtract(1, ordering: .acquiringAndReleasing) }
        book.dropKept(number)
        try? keep.unlink(Self.keptName(number))
    }

    // MARK: Events

    func willChangeData(_ inode: Inode, _ change: DataChange) {
        guard let keep, inode.isRegularFile else { return }
        let id = inode.key
        book.withLock { book in
            var size: UInt64 = 0
            if !book.model.isTracked(id) {
                guard let status = try? inode.withDescriptor({ (file) throws(Errno) in try file.status() }) else { return }
                size = UInt64(status.st_size)
                book.fileHandles[id] = try? inode.withDescriptor { (file) throws(Errno) in try FileHandle(of: file) }
            }
            let pieces = book.model.claim(id, change, currentSize: size).pieces
            guard !pieces.isEmpty else { return }
            do throws(Errno) {
                try save(pieces, of: inode, into: keep, as: Self.undoName(id, era: era.load(ordering: .acquiring)))
            } catch {
                book.model.forget(id, pieces)
                Diagnostics.note("crash simulation: cannot save what a change overwrites in file \(id): \(error)")
            }
        }
    }

    /// Copies `pieces` of the file (as it is now: still its synced version
    /// there) into its undo file at their undo offsets.
    private func save(_ pieces: [UnsyncedFile.SavedRange], of inode: Inode, into keep: FileDescriptor, as name: String) throws(Errno) {
        let source = try inode.withDescriptor { (file) throws(Errno) in try file.reopen(flags: O_RDONLY) }
        defer { source.closeQuietly() }
        let undo = try FileDescriptor.open(name, in: keep, flags: O_WRONLY | O_CREAT | O_NOFOLLOW, mode: 0o600)
        defer { undo.closeQuietly() }
        try Self.copy(pieces.map { ($0.offset, $0.undoOffset, $0.length) }, from: source, to: undo)
    }

    /// Copies each (from, to, length) range; what the source lacks (it is
    /// shorter) reads as zeros, as it would after the sync.
    static func copy(_ ranges: [(from: UInt64, to: UInt64, length: UInt64)], from source: FileDescriptor, to destination: FileDescriptor) throws(Errno) {
        let chunk = 1 << 20
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        for range in ranges {
            var done: UInt64 = 0
            while done < range.length {
                let want = Int(min(UInt64(chunk), range.length - done))
                let part = UnsafeMutableRawBufferPointer(rebasing: buffer[..<want])
                var count = try source.read(into: part, at: Int64(range.from + done))
                if count == 0 {  // past its end: zeros
                    part.initializeMemory(as: UInt8.self, repeating: 0)
                    count = want
                }
                var written = 0
                while written < count {
                    written += try destination.write(UnsafeRawBufferPointer(rebasing: part[written..<count]), at: Int64(range.to + done) + Int64(written))
                }
                done += UInt64(count)
            }
        }
    }

    func synced(_ inode: Inode) {
        guard let keep else { return }
        let id = inode.key
        let had = book.withLock { book -> UInt64? in
            book.fileHandles[id] = nil
            guard book.model.synced(id) else { return nil }
            let name = Self.undoName(id, era: era.load(ordering: .acquiring))
            try? keep.unlink(name)
            return nil
        }
        _ = had
    }

    func directorySynced(_ directory: EntryID) {
        guard let keep else { return }
        _ = keep
        book.withLock { book in
            let committed = book.model.directorySynced(directory)
            if book.model.journal.isEmpty { book.directoryHandles = [:] }
            for case .removed(_, _, .link(let number)) in committed { unlinkKept(number, in: &book) }
        }
    }

    func beforeRemove(_ status: stat, name: CName, in descriptor: FileDescriptor, parent directory: EntryID) {
        guard let keep else { return }
        let place = Place(parent: directory, name: Self.bytes(name))
        book.withLock { book in
            if case .link(let old) = book.pendingKept[place] { unlinkKept(old, in: &book) }
            if status.st_mode & S_IFMT == S_IFDIR {
                book.pendingKept[place] = .directory(mode: UInt32(status.st_mode & 0o7777), user: status.st_uid, group: status.st_gid)
                return
            }
            let number = book.nextKept
            book.nextKept += 1
            do throws(Errno) {
                try descriptor.link(name, as: Self.keptName(number), in: keep)
                book.pendingKept[place] = .link(number)
                book.kept(number, of: EntryID(status))
                keptLinks.add(1, ordering: .acquiringAndReleasing)
            } catch {
                book.pendingKept[place] = .lost  // another filesystem (EXDEV): it stays removed
            }
        }
    }

    func removeAbandoned(_ status: stat, name: CName, parent directory: EntryID) {
        let place = Place(parent: directory, name: Self.bytes(name))
        book.withLock { book in
            if case .link(let number) = book.pendingKept.removeValue(forKey: place) { unlinkKept(number, in: &book) }
        }
    }

    func created(_ status: stat, id: EntryID, name: CName, in parent: EntryID, opened: Bool) {
        record(.created(Place(parent: parent, name: Self.bytes(name)), entry: EntryID(status)))
    }

    func removed(_ status: stat, id: EntryID, name: CName, from parent: EntryID) {
        guard keep != nil else { return }
        record(removal(status, name: name, from: parent))
    }

    func moved(_ status: stat, id: EntryID, name: CName, from parent: EntryID, newName: CName, to newParent: EntryID) {
        record(move(status, name: name, from: parent, newName: newName, to: newParent))
    }

    /// Journaled together, under one hold of the book's lock: a directory
    /// sync in between would commit the removal without the move, and a
    /// crash would then leave neither name, which rename(2) never does.
    func renamedOver(_ status: stat, id: EntryID, name: CName, from parent: EntryID, newName: CName, to newParent: EntryID,
                     replacing replaced: stat, replacedID: EntryID) {
        guard keep != nil else { return }
        record([removal(replaced, name: newName, from: newParent), move(status, name: name, from: parent, newName: newName, to: newParent)])
    }

    /// `name` in `parent` gone, with what was kept of it for a crash (taken from `pendingKept`).
    private func removal(_ status: stat, name: CName, from parent: EntryID) -> NameChange {
        let place = Place(parent: parent, name: Self.bytes(name))
        let kept = book.withLock { $0.pendingKept.removeValue(forKey: place) } ?? .lost
        return .removed(place, entry: EntryID(status), kept: kept)
    }

    private func move(_ status: stat, name: CName, from parent: EntryID, newName: CName, to newParent: EntryID) -> NameChange {
        .moved(Place(parent: parent, name: Self.bytes(name)), to: Place(parent: newParent, name: Self.bytes(newName)), entry: EntryID(status))
    }

    func exchanged(_ exchange: Exchange) {
        guard !exchange.oneBackingFile else { return }  // rename(2) changed nothing on the backing store
        record(.exchanged(Place(parent: exchange.parent, name: Self.bytes(exchange.name)),
                          Place(parent: exchange.newParent, name: Self.bytes(exchange.newName))))
    }

    /// Journals `change`, with a handle of each directory it names (the
    /// kernel knows them: a request on them is under way).
    private func record(_ change: NameChange) {
        record([change])
    }

    /// Journals `changes` in order, with nothing of another request between them.
    private func record(_ changes: [NameChange]) {
        guard keep != nil else { return }
        let missing = book.withLock { book -> [EntryID] in
            for change in changes { book.model.record(change) }
            var missing: [EntryID] = []
            for directory in changes.flatMap(\.directories) where book.directoryHandles[directory] == nil && !missing.contains(directory) {
                missing.append(directory)
            }
            return missing
        }
        guard !missing.isEmpty else { return }
        var found: [EntryID: FileHandle] = [:]
        for directory in missing {
            guard let inode = inodes.existing(directory) else { continue }
            found[directory] = try? inode.withDescriptor { (file) throws(Errno) in try FileHandle(of: file) }
        }
        book.withLock { book in
            for (directory, handle) in found where !book.model.journal.isEmpty { book.directoryHandles[directory] = handle }
        }
    }
}

/// While recording, the kernel never reads a file from its backing file: a
/// crash must be able to fail every descriptor opened before it.
extension CrashRecorder: ServingPolicy {
    func refusesPassthrough(_ inode: Inode) -> Bool { isRecording }
}
