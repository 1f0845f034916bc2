import Dispatch
import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// Follows changes made behind the mount as they happen: a process writing
/// into the backing directory (an overlay mount's container, or one that
/// kept its working directory or open files in the container across an
/// in-place mount) is seen within about a second, and its change reaches
/// the ledger and the kernel's caches like a handler's.
///
/// fanotify with a filesystem mark reports every change on the backing
/// filesystem with the directory's file handle, the entry's name and the
/// changer's pid. The daemon's own changes (handlers, purger, cloud tier:
/// all threads of this process) are dropped by pid; a directory whose
/// handle does not lead into the ledger is outside the container, and its
/// handle is remembered as such. Each batch of events (what arrives within
/// `batchWindow` of the first) becomes one `reconcile` per directory named.
/// Where fanotify is refused (no `CAP_SYS_ADMIN`, a filesystem without
/// handles), inotify watches every directory of the ledger instead.
///
/// `PURGEFS_TRACK_BEHIND=0` in the daemon's environment turns tracking off
/// (the periodic verification still repairs, at its own pace);
/// `PURGEFS_TRACK_BEHIND=inotify` skips fanotify (to test the fallback).
final class BehindMountTracker: Sendable {
    /// The source of events, opened before the mount's walk so that no
    /// change between the walk and the start of tracking is lost.
    enum Source: Sendable {
        case fanotify(FanotifyWatch)
        case inotify(InotifyWatch)
    }

    /// What reconciling a directory needs: the ledger, the locks, the kernel's caches.
    private let reconciler: BehindMountReconciler
    private let source: Source
    private let verifier: BehindMountVerifier?
    /// Any real (not `O_PATH`) descriptor on the backing filesystem, for `open_by_handle_at`.
    private let handleRoot: FileDescriptor
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    static let batchWindow: Int32 = 100  // milliseconds
    /// How long events gather between two reads of one batch.
    static let batchSlice: Int32 = 20  // milliseconds
    /// Handles of directories found outside the container, remembered up to this many.
    static let outsideLimit = 65_536

    /// `PURGEFS_TRACK_BEHIND`: `0` off, `inotify` the fallback only (for its test).
    static var setting: String { CurrentProcess.environmentValue("PURGEFS_TRACK_BEHIND") ?? "1" }
    static var isEnabled: Bool { setting != "0" }

    /// Opens the source for the filesystem of `root`: fanotify, else inotify
    /// (whose watches are added once the ledger exists, in `start`).
    static func open(root: FileDescriptor) -> Source? {
        guard isEnabled else { return nil }
        if setting != "inotify" { do {
            // fanotify_mark refuses an O_PATH descriptor.
            let directory = try root.reopen(flags: O_RDONLY | O_DIRECTORY)
            defer { directory.closeQuietly() }
            return .fanotify(try FanotifyWatch(filesystemOf: directory))
        } catch {
            Diagnostics.note("changes behind the mount: fanotify unavailable (\(error)), watching each directory with inotify")
        } }
        do {
            return .inotify(try InotifyWatch())
        } catch {
            Diagnostics.note("changes behind the mount are not tracked: inotify unavailable (\(error)); the periodic verification repairs them")
            return nil
        }
    }

    init?(source: Source?, reconciler: BehindMountReconciler, verifier: BehindMountVerifier?) {
        guard let source, let handleRoot = try? reconciler.root.reopen(flags: O_RDONLY | O_DIRECTORY) else { return nil }
        self.source = source
        self.reconciler = reconciler
        self.verifier = verifier
        self.handleRoot = handleRoot
    }

    deinit { handleRoot.closeQuietly() }

    func start() {
        DispatchQueue(label: "purgefs.behind-mount-tracker").async { [self] in
            var outside: Set<FileHandle> = []
            var watches = WatchTable()
            if case .inotify(let watch) = source {
                for (_, descriptor) in watches.watchAll(reconciler, with: watch) { descriptor.closeQuietly() }
            }
            let me = CurrentProcess.id.rawValue
            while !stopping.load(ordering: .acquiring) {
                guard wait(milliseconds: 250) else { continue }
                // Read in slices, not per event: every write on the backing
                // filesystem (the daemon's own included) is an event, and a
                // wake-up per event cost the daemon a read(2) per write. In
                // between, the kernel's queue gathers them and merges repeats.
                var events = read(excluding: me)
                let end = WallClock.nanoseconds() + UInt64(Self.batchWindow) * 1_000_000
                while events.count < 200_000, WallClock.nanoseconds() < end {
                    CurrentProcess.sleep(milliseconds: Int(Self.batchSlice))
                    let more = read(excluding: me)
                    if more.isEmpty { break }
                    events += more
                }
                apply(events, outside: &outside, watches: &watches)
            }
            finished.signal()
        }
    }

    /// Stops the loop and waits for its round to end.
    func stop() {
        stopping.store(true, ordering: .releasing)
        finished.wait()
    }

    private func wait(milliseconds: Int32) -> Bool {
        switch source {
        case .fanotify(let watch): watch.wait(milliseconds: milliseconds)
        case .inotify(let watch): watch.wait(milliseconds: milliseconds)
        }
    }

    private func read(excluding me: Int32) -> [ChangeEvent] {
        let result: [ChangeEvent]?
        switch source {
        case .fanotify(let watch): result = try? watch.read(excluding: me)
        case .inotify(let watch): result = try? watch.read()
        }
        return result ?? []
    }

    /// What one batch asks of one directory.
    private struct Work {
        var descriptor: FileDescriptor
        var names: Set<[CChar]> = []
        var listing = false
        /// Names arrived here (made, or moved in): reconciled before the rest.
        var destination = false
    }

    private func apply(_ events: [ChangeEvent], outside: inout Set<FileHandle>, watches: inout WatchTable) {
        let me = CurrentProcess.id.rawValue
        var work: [EntryID: Work] = [:]
        var resolved: [ChangeEvent.Place: EntryID?] = [:]
        var newDirectoryNamed = false
        /// A watch the kernel removed: its directory's inode number may be a
        /// new directory's already, made before this event came.
        var watchForgotten = false
        /// inotify places whose directory could not be reached by its recorded
        /// names (moved in this batch): tried again once the batch's moves are in.
        var retries: [(ChangeEvent.Place, [CChar], Bool, Bool)] = []
        var retrying = false
        defer { for item in work.values { item.descriptor.closeQuietly() } }

        func note(_ place: ChangeEvent.Place, _ name: [CChar], listing: Bool, destination: Bool) {
            let id: EntryID?
            if let known = resolved[place] {
                id = known
            } else {
                let opened = open(place, outside: &outside, watches: watches)
                id = opened?.0
                if id == nil, case .watch = place, !retrying {
                    retries.append((place, name, listing, destination))
                    return
                }
                resolved[place] = id
                if let (id, descriptor) = opened {
                    if work[id] == nil { work[id] = Work(descriptor: descriptor) } else { descriptor.closeQuietly() }
                }
            }
            guard let id, work[id] != nil else { return }
            if name.count > 1 { work[id]!.names.insert(name) }
            if listing { work[id]!.listing = true }
            if destination { work[id]!.destination = true }
        }

        for event in events {
            if event.kind.contains(.overflow) {
                verifier?.kick()
                continue
            }
            if event.kind.contains(.unwatched), case .watch(let wd)? = event.directory {
                // Its directory is gone; a new one may get its inode number
                // (ext4 reuses it at once) and must then be watched anew. The
                // kernel may send this after the new one's creation (the old
                // inode's watch goes when it is evicted, after its number is
                // free), in a later batch: the ledger's directories are then
                // watched and listed again below.
                watches.forget(wd)
                watchForgotten = true
                continue
            }
            // Our own changes: the ledger has them from the handlers already.
            if event.pid == me { continue }
            guard let place = event.directory else { continue }
            let kind = event.kind
            if kind.contains(.onDirectory) && kind.contains(.created) { newDirectoryNamed = true }
            if let target = event.target {
                // One rename: the name left `place` and arrived in the target (replacing what was there).
                note(place, event.name, listing: true, destination: false)
                note(target.directory, target.name, listing: true, destination: true)
                if kind.contains(.onDirectory) { newDirectoryNamed = true }
                continue
            }
            // A name gone, or (inotify's half of a rename) one that may have replaced another.
            let listing = kind.contains(.deleted) || kind.contains(.renamed)
            note(place, event.name, listing: listing, destination: kind.contains(.created))
        }

        var changes = BehindMountReconciler.Changes()
        func reconcileAll() {
            let ordered = work.sorted { $0.value.destination && !$1.value.destination }
            for (id, item) in ordered {
                changes.merge(reconciler.reconcile(id, at: item.descriptor, names: item.names, listing: item.listing))
                item.descriptor.closeQuietly()
            }
            work = [:]
        }
        reconcileAll()
        if !retries.isEmpty {
            retrying = true
            resolved = [:]
            for (place, name, listing, destination) in retries { note(place, name, listing: listing, destination: destination) }
            reconcileAll()
        }
        if case .inotify(let watch) = source, newDirectoryNamed || watchForgotten || !changes.addedDirectories.isEmpty {
            changes.merge(watchNewDirectories(with: watch, in: &watches))
        }
        if !changes.addedDirectories.isEmpty { outside.removeAll() }
        for notice in changes.notices { reconciler.notifier.send(notice) }
    }

    /// Watches the ledger's directories that are not watched yet, then lists
    /// each of them once more: what was made in a new directory after the
    /// walk that found it and before its watch sent no event. A directory
    /// that listing finds is watched and listed in turn.
    private func watchNewDirectories(with watch: InotifyWatch, in watches: inout WatchTable) -> BehindMountReconciler.Changes {
        var changes = BehindMountReconciler.Changes()
        var fresh = watches.watchAll(reconciler, with: watch)
        // Each round needs directories made meanwhile; the bound only keeps
        // a process making them without end from holding this loop (its
        // later directories are watched at the next batch).
        for _ in 0..<64 where !fresh.isEmpty {
            var added = false
            for (id, descriptor) in fresh {
                let found = reconciler.reconcile(id, at: descriptor, names: [], listing: true)
                descriptor.closeQuietly()
                added = added || !found.addedDirectories.isEmpty
                changes.merge(found)
            }
            fresh = added ? watches.watchAll(reconciler, with: watch) : []
        }
        for (_, descriptor) in fresh { descriptor.closeQuietly() }
        return changes
    }

    /// The directory `place` names, open, if the ledger has it.
    private func open(_ place: ChangeEvent.Place, outside: inout Set<FileHandle>, watches: WatchTable) -> (EntryID, FileDescriptor)? {
        switch place {
        case .handle(let handle):
            if outside.contains(handle) { return nil }
            guard let descriptor = try? handle.open(on: handleRoot, flags: O_RDONLY | O_DIRECTORY) else { return nil }
            guard let status = try? descriptor.status(),
                  reconciler.state.read({ ledger, _ in ledger.kind(of: EntryID(status)) }) == .directory
            else {
                descriptor.closeQuietly()
                if outside.count >= Self.outsideLimit { outside.removeAll() }
                outside.insert(handle)
                return nil
            }
            return (EntryID(status), descriptor)
        case .watch(let watch):
            guard let id = watches.directories[watch],
                  let chain = reconciler.state.read({ _, names in names.components(of: id) }),
                  let descriptor = try? DirectoryNames.open(chain, from: reconciler.root) else { return nil }
            return (id, descriptor)
        }
    }
}

/// inotify's watches, one per directory of the ledger (the fallback).
private struct WatchTable {
    var directories: [Int32: EntryID] = [:]
    var watched: Set<EntryID> = []
    var full = false

    /// Forgets a watch the kernel removed (its directory was deleted).
    mutating func forget(_ wd: Int32) {
        guard let id = directories.removeValue(forKey: wd) else { return }
        watched.remove(id)
    }

    /// Watches every directory of the ledger not watched yet (opened by its
    /// recorded names), and forgets watches of directories it no longer has.
    /// Returns the directories watched now, open (the caller closes them).
    mutating func watchAll(_ reconciler: BehindMountReconciler, with watch: InotifyWatch) -> [(EntryID, FileDescriptor)] {
        let (ids, chains) = reconciler.state.read { ledger, names -> ([EntryID], [EntryID: [(id: EntryID, name: [CChar])]]) in
            let ids = ledger.directoryIDs
            var chains: [EntryID: [(id: EntryID, name: [CChar])]] = [:]
            for id in ids where !watched.contains(id) { chains[id] = names.components(of: id) }
            return (ids, chains)
        }
        let live = Set(ids)
        for (wd, id) in directories where !live.contains(id) {
            watch.unwatch(wd)
            directories[wd] = nil
            watched.remove(id)
        }
        var fresh: [(EntryID, FileDescriptor)] = []
        for (id, chain) in chains {
            guard let descriptor = try? DirectoryNames.open(chain, from: reconciler.root) else { continue }
            do {
                let wd = try watch.watch(descriptor)
                // The same number for an inode watched already: a directory
                // whose watch is kept under its old identity.
                if let earlier = directories[wd] { watched.remove(earlier) }
                directories[wd] = id
                watched.insert(id)
                fresh.append((id, descriptor))
            } catch {
                descriptor.closeQuietly()
                if !full {
                    Diagnostics.note("changes behind the mount: cannot watch every directory (\(error)); the periodic verification repairs the rest")
                }
                full = true
                break
            }
        }
        return fresh
    }
}
