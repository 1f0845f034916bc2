import Dispatch
import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// Repairs what live tracking missed (events dropped by a full queue,
/// tracking unavailable or off, a change racing the mount's walk): every
/// `interval` it walks the backing container as `du` does and compares
/// each directory with the ledger; a directory that differs is reconciled
/// (`BehindMountReconciler.reconcile`, under its namespace lock, re-listed
/// there, so a difference that was only a handler's change in flight
/// repairs nothing), and every repair is a line in `daemon.log`.
///
/// Never blocks the mount: it runs on a thread of its own, takes
/// `ContainerState`'s lock only to read one directory's records at a time
/// (no I/O under it), and no handler waits for it.
final class BehindMountVerifier: Sendable {
    /// What reconciling a directory needs: the ledger, the locks, the kernel's caches.
    private let reconciler: BehindMountReconciler
    private let loop: BackgroundLoop

    /// Seconds between verifications: `PURGEFS_VERIFY_INTERVAL` in the
    /// daemon's environment, 300 by default.
    static let defaultInterval: Int = {
        guard let text = CurrentProcess.environmentValue("PURGEFS_VERIFY_INTERVAL"),
              let seconds = Int(text), seconds > 0 else { return 300 }
        return seconds
    }()

    init(reconciler: BehindMountReconciler, interval: Int = BehindMountVerifier.defaultInterval) {
        self.reconciler = reconciler
        loop = BackgroundLoop(label: "purgefs.behind-mount-verifier", period: .seconds(interval))
    }

    func start() {
        loop.start { [self] in verify() }
    }

    /// Verifies now rather than at the next interval (the tracker lost events).
    func kick() { loop.kick() }

    /// Stops the loop, waiting for a verification in progress to give up.
    func stop() { loop.stop() }

    /// One pass over the container; returns the number of repairs.
    @discardableResult
    func verify() -> Int {
        guard let top = try? reconciler.root.reopen(flags: O_RDONLY | O_DIRECTORY),
              let status = try? top.status() else { return 0 }
        defer { top.closeQuietly() }
        var repairs = 0
        var depth = 0
        verify(EntryID(status), at: top, repairs: &repairs, depth: &depth)
        return repairs
    }

    private struct Listed {
        var name: [CChar]
        var id: EntryID
        var status: stat
    }

    private func verify(_ id: EntryID, at directory: FileDescriptor, repairs: inout Int, depth: inout Int) {
        if loop.isStopping || depth > 4096 { return }
        guard let entries = list(id, at: directory) else { return }
        let files = entries.filter { $0.status.st_mode & S_IFMT == S_IFREG }
        let directories = entries.filter { $0.status.st_mode & S_IFMT == S_IFDIR }
        // The ledger's view of this directory, read in one go.
        let (recorded, figures, recordedNames) = reconciler.state.read { ledger, names
            -> (Ledger.Children?, [EntryID: (size: UInt64, allocated: UInt64)], [EntryID: [CChar]]) in
            guard let children = try? ledger.children(of: id) else { return (nil, [:], [:]) }
            var figures: [EntryID: (size: UInt64, allocated: UInt64)] = [:]
            for file in children.files {
                if let info = try? ledger.file(file) { figures[file] = (info.size, info.allocated) }
            }
            var recordedNames: [EntryID: [CChar]] = [:]
            for child in children.directories { recordedNames[child] = names.components(of: child)?.last?.name }
            return (children, figures, recordedNames)
        }
        guard let recorded else { return }  // not the ledger's: its parent's reconcile adopts it
        let listing = recorded.files.sorted() != files.map(\.id).sorted()
            || Set(recorded.directories) != Set(directories.map(\.id))
            || directories.contains { entry in recordedNames[entry.id].map { $0 != entry.name } ?? false }
        var names: Set<[CChar]> = []
        for file in files {
            guard let known = figures[file.id] else { continue }
            let charged = reconciler.charges(file.id)
            if known.size != UInt64(max(file.status.st_size, 0))
                || (!charged && known.allocated != ContainerState.allocated(file.status)) {
                names.insert(file.name)
            }
        }
        if listing || !names.isEmpty {
            let changes = reconciler.reconcile(id, at: directory, names: names, listing: listing)
            for line in changes.repairs { Diagnostics.note("verification repaired a change made behind the mount: \(line)") }
            repairs += changes.repairs.count
            for notice in changes.notices { reconciler.notifier.send(notice) }
        }
        for child in directories where UInt64(child.status.st_dev) == id.device {
            let opened = child.name.withUnsafeBufferPointer { buffer in
                try? FileDescriptor.open(buffer.baseAddress!, in: directory, flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
            }
            guard let opened else { continue }
            depth += 1
            verify(child.id, at: opened, repairs: &repairs, depth: &depth)
            depth -= 1
            opened.closeQuietly()
        }
    }

    /// The regular files and directories in `directory`, as the ledger
    /// would know them (linked clones by their member identities).
    private func list(_ id: EntryID, at directory: FileDescriptor) -> [Listed]? {
        guard let stream = try? DirectoryStream(directory) else { return nil }
        var entries: [Listed] = []
        while let entry = try? stream.next() {
            if entry.isDotOrDotDot || CloneLeftovers.matches(entry.name) { continue }
            if let hidden = reconciler.hidden, hidden.parent == id, hidden.hides(entry.name) { continue }
            guard entry.type == DT_REG || entry.type == DT_DIR || entry.type == DT_UNKNOWN,
                  let status = try? stream.descriptor.status(of: entry.name) else { continue }
            let kind = status.st_mode & S_IFMT
            guard kind == S_IFREG || kind == S_IFDIR, UInt64(status.st_dev) == id.device else { continue }
            entries.append(Listed(
                name: CNames.copy(entry.name),
                id: reconciler.identity(status, entry.name, id), status: status))
        }
        return entries
    }
}
