import Glibc
import PurgeCore
import PurgeSys

/// `purgefs crash`: the container becomes what it would be after a power
/// loss now (`CrashRecorder` kept what that takes), and the mount carries on.
///
/// In order: the era goes up (every file open so far answers `EIO`), the
/// recorder's book is taken whole (what happens from here on is after the
/// reboot), the name changes are undone newest first under the tree lock and
/// the stripes of the directories each touches (a name that no longer is
/// what the journal says is left alone and reported), then each file's data
/// is written back from its undo file and cut to its synced size. The
/// ledger is repaired by reconciling each touched directory and announcing
/// each restored file's figures (`resized`); the kernel hears of names and
/// data only through `KernelNotifier`'s queue, once no lock is held.
///
/// It holds what that takes of the mount, taken once at its assembly
/// (`init(_:)`), not the filesystem: the recorder, the root, the namespace
/// locks, the ledger (for names), the observers, the kernel's notifier, a
/// directory's reconciliation (`BehindMountReconciler`) and look-ups (the
/// root's identity, a node by identity, the nodes of open regular files,
/// whether a linked clone shares a file's data).
final class CrashSimulation: CrashSimulating {
    private let crashes: CrashRecorder
    private let root: FileDescriptor
    private let locks: NamespaceLocks
    private let state: ContainerState
    private let events: Observers
    private let notifier: KernelNotifier
    private let reconciler: BehindMountReconciler
    private let rootKey: EntryID
    /// The kernel's node for an identity, if it knows one.
    private let kernelNode: @Sendable (EntryID) -> NodeID?
    /// The kernel's nodes of regular files open now.
    private let openRegularFiles: @Sendable () -> [NodeID]
    /// Whether a linked clone shares the data of the file with this identity.
    private let sharesData: @Sendable (EntryID) -> Bool

    init(_ mount: MountAssembly) {
        let inodes = mount.inodes
        let clones = mount.clones
        crashes = mount.crashes
        root = mount.root
        locks = mount.locks
        state = mount.state
        events = mount.events
        notifier = mount.notifier
        reconciler = BehindMountReconciler(mount)
        rootKey = inodes.inode(.root).key
        kernelNode = { inodes.node(for: $0) }
        openRegularFiles = {
            inodes.all().compactMap { node, inode in inode.isRegularFile && !inode.sharing.openFiles.isEmpty ? node : nil }
        }
        sharesData = { clones.kind == .linked && clones.sharesBacking($0) }
    }

    /// One line per thing a crash now would undo; changes nothing.
    func pendingCrash() -> [String] {
        let (model, handles) = crashes.book.withLock { ($0.model, $0.fileHandles) }
        let reach = try? root.reopen(flags: O_RDONLY | O_DIRECTORY)
        defer { reach?.closeQuietly() }
        let container = (try? root.currentPath()) ?? ""
        var lines: [String] = []
        for change in model.journal.reversed() { lines.append(describe(change)) }
        for (id, file) in model.files.sorted(by: { $0.key < $1.key }) {
            if let line = describe(id, file, handle: handles[id], reach: reach, container: container) { lines.append(line) }
        }
        return lines
    }

    /// Crashes: undoes what was not synced, and returns one line per undo
    /// (what was lost) and per thing it could not undo.
    func crash() -> [String] {
        guard let keep = crashes.keep else { return ["crash simulation is off: no crash directory in the state directory"] }
        let taken = crashes.book.withLock { book in
            crashes.beginEra()
            let all = book.model.takeAll()
            defer { book.fileHandles = [:]; book.directoryHandles = [:] }
            return (files: all.files, undo: all.undo, fileHandles: book.fileHandles, directoryHandles: book.directoryHandles)
        }
        let undoEra = crashes.currentEra - 1
        guard let reach = try? root.reopen(flags: O_RDONLY | O_DIRECTORY) else { return ["cannot reach the container"] }
        defer { reach.closeQuietly() }
        let container = (try? root.currentPath()) ?? ""
        var lines: [String] = []
        var touched: [EntryID: Set<[CChar]>] = [:]
        
        func open(_ directory: EntryID) -> FileDescriptor? {
            if directory == rootKey { return try? reach.duplicate() }
            guard let handle = taken.directoryHandles[directory],
                  let descriptor = try? handle.open(on: reach, flags: O_RDONLY | O_DIRECTORY),
                  let status = try? descriptor.status(), EntryID(status) == directory
            else { return nil }
            return descriptor
        }

        // Names, newest first, so each undo finds the names as they were right after its change.
        _ = try? locks.withTreeLock { () throws(Errno) in
            for change in taken.undo {
                let line = describe(change)
                let directories = change.directories
                let opened = directories.map(open)
                defer { for descriptor in opened { descriptor?.closeQuietly() } }
                guard opened.allSatisfy({ $0 != nil }) else {
                    lines.append(line + ": left alone (its directory is gone)")
                    continue
                }
                var outcome: String?
                let descriptors = opened.map { $0! }
                if directories.count == 1 {
                    _ = try? locks.withLocks(directories[0]) { outcome = undo(change, in: descriptors, keep: keep) }
                } else {
                    _ = try? locks.withLocks(directories[0], directories[1]) { outcome = undo(change, in: descriptors, keep: keep) }
                }
                lines.append(outcome.map { line + ": left alone (\($0))" } ?? line)
                for place in Self.places(of: change) { touched[place.parent, default: []].insert(place.name.map { CChar(bitPattern: $0) } + [0]) }
            }
        }

        // Data: written back from the undo file, cut to the synced size.
        var notices: [KernelNotifier.Notice] = []
        for (id, record) in taken.files.sorted(by: { $0.key < $1.key }) {
            // A file that is gone (its removal was committed) loses nothing anyone can see: not listed.
            guard var line = describe(id, record, handle: taken.fileHandles[id], reach: reach, container: container) else { continue }
            defer { lines.append(line) }
            if sharesData(id) {
                line += ": left alone (a linked clone shares its data)"
                continue
            }
            guard let handle = taken.fileHandles[id], let file = try? handle.open(on: reach, flags: O_RDWR),
                  let status = try? file.status(), EntryID(status) == id
            else {
                line += ": left alone (the file is gone)"
                continue
            }
            defer { file.closeQuietly() }
            do throws(Errno) {
                if !record.saved.isEmpty {
                    let undo = try FileDescriptor.open(CrashRecorder.undoName(id, era: undoEra), in: keep, flags: O_RDONLY | O_NOFOLLOW)
                    defer { undo.closeQuietly() }
                    try CrashRecorder.copy(record.saved.map { ($0.undoOffset, $0.offset, $0.length) }, from: undo, to: file)
                }
                try file.truncate(to: Int64(record.syncedSize))
                if record.lost { line += " (in part: some of its synced data could not be saved)" }
            } catch {
                line += ": failed (\(error))"
            }
            if let now = try? file.status(), now.st_nlink > 0 { events.resized(now, id: id) }
            if let node = kernelNode(id) { notices.append(.dataChanged(node)) }
        }

        // What was kept for this crash goes.
        for id in taken.files.keys { try? keep.unlink(CrashRecorder.undoName(id, era: undoEra)) }
        crashes.book.withLock { book in
            for case .removed(_, _, .link(let number)) in taken.undo { crashes.unlinkKept(number, in: &book) }
        }

        // The ledger and the kernel, directory by directory.
        for (directory, names) in touched {
            guard let descriptor = open(directory) else { continue }
            defer { descriptor.closeQuietly() }
            notices += reconciler.reconcile(directory, at: descriptor, names: names, listing: true).notices
        }
        // Files open before the crash: their cached pages go, so the next
        // read through an old descriptor reaches the daemon (and its EIO).
        let restored = Set(notices.compactMap { notice -> NodeID? in
            if case .dataChanged(let node) = notice { return node } else { return nil }
        })
        for node in openRegularFiles() where !restored.contains(node) {
            notices.append(.dataChanged(node))
        }
        for notice in notices { notifier.send(notice) }
        Diagnostics.note("crash: \(taken.undo.count) name changes undone, \(taken.files.count) files back to their last sync")
        for line in lines { Diagnostics.note("crash: " + line) }
        return lines
    }

    /// Undoes one change; nil when done, else why it was left alone.
    /// `directories` are open in the order of `change.directories`.
    private func undo(_ change: NameChange, in directories: [FileDescriptor], keep: FileDescriptor) -> String? {
        func cName<T>(_ name: [UInt8], _ body: (CName) throws(Errno) -> T) throws(Errno) -> T {
            let bytes = name.map { CChar(bitPattern: $0) } + [0]
            return try bytes.withUnsafeBufferPointer { buffer in
                Result { () throws(Errno) -> T in try body(buffer.baseAddress!) }
            }.get()
        }
        do throws(Errno) {
            switch change {
            case .created(let place, let entry):
                let status = try cName(place.name) { (name) throws(Errno) in try directories[0].status(of: name) }
                guard EntryID(status) == entry else { return "the name is another file's now" }
                try cName(place.name) { (name) throws(Errno) in try directories[0].unlink(name, directory: status.st_mode & S_IFMT == S_IFDIR) }
            case .removed(let place, _, let kept):
                switch kept {
                case .link(let number):
                    try cName(place.name) { (name) throws(Errno) in try keep.link(CrashRecorder.keptName(number), as: name, in: directories[0]) }
                case .directory(let mode, let user, let group):
                    try cName(place.name) { (name) throws(Errno) in
                        try directories[0].makeDirectory(name, mode: mode_t(mode))
                        let made = try FileDescriptor.open(name, in: directories[0], flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
                        defer { made.closeQuietly() }
                        try made.changeOwner(user: user, group: group)
                        try made.changeMode(mode_t(mode))
                    }
                case .lost:
                    return "it could not be kept: the state directory is on another filesystem"
                }
            case .moved(let from, let to, let entry):
                let status = try cName(to.name) { (name) throws(Errno) in try directories[1].status(of: name) }
                guard EntryID(status) == entry else { return "the name is another file's now" }
                try cName(to.name) { (newName) throws(Errno) in
                    try cName(from.name) { (oldName) throws(Errno) in
                        try directories[1].rename(newName, to: oldName, in: directories[0], flags: .noReplace)
                    }
                }
            case .exchanged(let one, let other):
                try cName(one.name) { (first) throws(Errno) in
                    try cName(other.name) { (second) throws(Errno) in
                        try directories[0].rename(first, to: second, in: directories[1], flags: .exchange)
                    }
                }
            }
        } catch {
            return "\(error)"
        }
        return nil
    }

    private static func places(of change: NameChange) -> [Place] {
        switch change {
        case .created(let place, _), .removed(let place, _, _): return [place]
        case .moved(let from, let to, _): return [from, to]
        case .exchanged(let one, let other): return [one, other]
        }
    }

    private func path(_ place: Place) -> String {
        let directory = state.read { _, names in names.path(of: place.parent) } ?? "(directory \(place.parent))"
        let name = String(decoding: place.name, as: UTF8.self)
        return directory.isEmpty ? name : directory + "/" + name
    }

    private func describe(_ change: NameChange) -> String {
        switch change {
        case .created(let place, _): return "name \(path(place)): created since the last sync, removed"
        case .removed(let place, _, _): return "name \(path(place)): removed since the last sync, back"
        case .moved(let from, let to, _): return "name \(path(to)): renamed from \(path(from)) since the last sync, back"
        case .exchanged(let one, let other): return "names \(path(one)) and \(path(other)): exchanged since the last sync, back"
        }
    }

    /// The line for a file with data to restore; nil when it is gone (no
    /// name left, nothing to reach it by). Where its size is known, it ends
    /// with the bytes undone: the saved bytes of the synced version written
    /// back, and what lies past the synced size.
    private func describe(_ id: EntryID, _ file: UnsyncedFile, handle: FileHandle?, reach: FileDescriptor?, container: String) -> String? {
        var where_ = "file \(id)"
        var size: UInt64?
        if let handle, let reach {
            guard let opened = try? handle.open(on: reach, flags: OpenFlags.path) else { return nil }
            defer { opened.closeQuietly() }
            guard let status = try? opened.status(), status.st_nlink > 0 else { return nil }
            size = UInt64(max(0, status.st_size))
            if let path = try? opened.currentPath() {
                where_ = path.hasPrefix(container + "/") ? String(path.dropFirst(container.count + 1)) : path
            }
        }
        let line = "data \(where_): written since the last sync, back to \(file.syncedSize) bytes"
        guard let size else { return line }
        let undone = file.saved.reduce(0) { $0 + $1.length } + (size > file.syncedSize ? size - file.syncedSize : 0)
        return line + " (\(undone) bytes undone)"
    }
}
