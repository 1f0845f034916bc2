import CLinux
import Dispatch
import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// The cloud tier of one mount: uploads files of the ubiquitous zones to
/// the remote after they are closed, evicts and downloads their data, and
/// carries deletes and renames over to the remote.
///
/// Uploads, remote deletes and renames run on the tier's own thread, never
/// in a FUSE request; a download runs in the `open` that needs it.
///
/// Lock order: `transfers` (one download or eviction at a time), then a
/// namespace stripe and `ContainerState`'s lock (purging for room), and the
/// tier's `books` last: held around its tables and the manifest's save,
/// taking nothing else.
final class CloudTier: Sendable {
    /// The remote, through the network's faults: every remote call goes there.
    let remote: CloudLink
    let zones: [String]
    let root: FileDescriptor
    let stateDirectory: StateDirectory
    /// `optimize_storage`: under pressure, evict uploaded documents.
    let optimizeStorage: Bool
    /// What the tier needs of the mount it serves (`CloudMount`), set once
    /// the filesystem exists (before the mount serves,
    /// `start(filesystem:log:)`) and dropped at `stop`: its observers hold
    /// the tier. What needs the mount does nothing without it (an upload
    /// waits, an eviction is refused).
    private let mount = Mutex<Mount>(Mount())

    private struct Mount {
        var mounted: CloudMount?
        var log: PurgeLog?
    }

    var mounted: CloudMount? { mount.withLock { $0.mounted } }

    func attach(to mounted: CloudMount, log: PurgeLog) {
        mount.withLock { mount in
            mount.mounted = mounted
            mount.log = log
        }
    }

    /// One download or eviction at a time: it orders work (a transfer
    /// copies data and purges for room under it) and guards no data.
    let transfers = ThreadLock()
    /// The tier's tables: the tier's lock.
    private let books: Mutex<Books>

    /// Everything behind the tier's lock.
    struct Books {
        var manifest: CloudManifest
        /// Local files of the ubiquitous zones, by identity.
        var paths: [EntryID: String] = [:]
        /// Uploads to make, with the time they are due (ns).
        var pending: [String: UInt64] = [:]
        /// Failed attempts in a row, for the backoff.
        var failures: [String: Int] = [:]
        /// The journalled intents' failed attempts in a row, and when they are
        /// due again (ns): the first one holds up the rest, with one backoff.
        var intentFailures = 0
        var intentsDue: UInt64 = 0
        /// Background downloads asked for.
        var downloads: Set<EntryID> = []
        /// Opens between their download check and the ledger's open count.
        var opening: [EntryID: Int] = [:]
        /// Files whose eviction has begun (`beginEviction`): an open of one
        /// waits for the eviction to end and then downloads.
        var evicting: Set<EntryID> = []
        /// Files being copied to the remote (`upload`): none of them is
        /// evicted meanwhile, so an upload never copies a hole.
        var uploading: Set<EntryID> = []
        /// Remote paths whose status is being read (`probe`), one read each.
        var probing: [String: StatusRead] = [:]
    }

    /// Runs `body` holding the tier's lock, with everything it guards.
    func withBooks<T, E: Error>(_ body: (inout Books) throws(E) -> T) throws(E) -> T {
        try books.withLock { (books: inout sending Books) throws(E) -> sending T in try body(&books) }
    }

    private let wake = DispatchSemaphore(value: 0)
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    /// How long after the last close an upload starts.
    static let debounce: UInt64 = 1_000_000_000
    static let longestBackoff: UInt64 = 30_000_000_000

    init(store: any CloudStore, zones: [String], root: FileDescriptor, stateDirectory: StateDirectory, optimizeStorage: Bool = false) {
        self.optimizeStorage = optimizeStorage
        self.remote = CloudLink(store: store)
        self.zones = zones
        self.root = root
        self.stateDirectory = stateDirectory
        var loaded = CloudManifest()
        if let bytes = try? stateDirectory.read(CloudManifest.fileName) {
            if let decoded = CloudManifest(decoding: bytes) { loaded = decoded } else {
                Diagnostics.note("state file \(CloudManifest.fileName) is malformed; starting afresh")
            }
        }
        books = Mutex(Books(manifest: loaded))
    }

    // MARK: The worker

    func start() {
        DispatchQueue(label: "purgefs.cloud").async { [self] in
            // The first pass walks the zones at once: the walk at mount, before
            // the clone registry was read, knew clones by their backing files.
            var lastPass: UInt64 = 0
            var lastPoll = WallClock.nanoseconds()
            while !stopping.load(ordering: .acquiring) {
                _ = wake.wait(timeout: .now() + .milliseconds(250))
                if stopping.load(ordering: .acquiring) { break }
                applyIntents()
                // Each upload may take seconds on a slow remote: an unmount does not wait for the rest.
                for path in duePaths() where !stopping.load(ordering: .acquiring) { upload(path) }
                for id in takeDownloads() where !stopping.load(ordering: .acquiring) { _ = try? download(id, inode: nil) }
                let now = WallClock.nanoseconds()
                if now - lastPass >= Self.rescanInterval {
                    scheduleChanged()
                    lastPass = now
                }
                if now - lastPoll >= UInt64(Self.remotePollSeconds) * 1_000_000_000 {
                    adoptRemoteAdditions()
                    lastPoll = now
                }
            }
            finished.signal()
        }
    }

    /// How often the zones are walked for changes no hook reported: a
    /// safety net (creates, writes, truncates, links and renames through the
    /// mount are reported as they happen), costly on a large zone.
    static let rescanInterval: UInt64 = 60_000_000_000

    func kick() { wake.signal() }

    /// Stops the store first (rclone): a remote call under way fails at
    /// once instead of holding the unmount (what it did not finish is
    /// still pending or journalled, and goes again at the next mount).
    func stop() {
        stopping.store(true, ordering: .releasing)
        wake.signal()
        remote.store.stop()
        finished.wait()
        mount.withLock { $0.mounted = nil }
    }

    /// The paths due for upload, but for those a journalled delete or rename
    /// still to apply touches (`touch`): their upload waits for it. Applied
    /// after the upload, a delete retried with backoff (the remote refused it
    /// a while) took the new copy of a document replaced by a rename, which
    /// then read as uploaded, was evicted, and could never be downloaded.
    private func duePaths() -> [String] {
        let now = WallClock.nanoseconds()
        return withBooks { books in
            books.pending.filter { $0.value <= now && !books.manifest.intents.touch($0.key) }.map(\.key).sorted()
        }
    }

    private func takeDownloads() -> Set<EntryID> {
        withBooks { books in
            defer { books.downloads = [] }
            return books.downloads
        }
    }

    /// Schedules `path` for upload after `delay` ns (keeping an earlier time).
    func schedule(_ path: String, after delay: UInt64) {
        let due = WallClock.nanoseconds() + delay
        withBooks { books in books.pending[path] = min(books.pending[path] ?? due, due) }
    }

    /// Writes the manifest. Called holding the tier's lock (`withBooks`), so
    /// that saves land in the order of the changes.
    func save(_ manifest: CloudManifest) {
        do { try stateDirectory.replace(CloudManifest.fileName, with: manifest.encoded) } catch {
            Diagnostics.note("cannot save the cloud manifest: \(error)")
        }
    }

    // MARK: Uploads

    /// Uploads `path` if its content is not on the remote yet: copied aside,
    /// synced and renamed into place; recorded only if the file did not
    /// change meanwhile.
    /// A sparse clone's bytes in an unnamed file of the state directory
    /// (nil when it cannot be made: the upload then fails and goes again).
    static func flatCopy(of sparse: SparseMemberFile, in directory: StateDirectory) -> FileDescriptor? {
        guard let copy = try? FileDescriptor.open(".", in: directory.descriptor, flags: clinux_O_TMPFILE | O_RDWR, mode: 0o600) else {
            return nil
        }
        do throws(Errno) { try sparse.copy(into: copy) } catch {
            copy.closeQuietly()
            return nil
        }
        return copy
    }

    func upload(_ path: String) {
        let file: FileDescriptor
        do { file = try CloudLocal.open(path, from: root, flags: O_RDONLY | O_NONBLOCK) } catch {
            withBooks { $0.pending[path] = nil }  // gone: its delete or rename says what to do
            return
        }
        defer { file.closeQuietly() }
        guard let status = try? file.status(), status.st_mode & S_IFMT == S_IFREG else {
            withBooks { $0.pending[path] = nil }
            return
        }
        guard let mounted else { return }  // not mounted yet: it stays due
        let id = identity(of: path, status: status)
        if (mounted.state.read { ledger, _ in (try? ledger.file(id).openCount) ?? 0 }) > 0 {
            schedule(path, after: Self.debounce)  // after its last close
            return
        }
        // Marked before its content is looked at: no eviction (nor so the
        // download after one) changes the file while it is copied.
        let begun: Bool? = withBooks { books in
            // An evicted file has no data here to upload, whatever its signature says.
            if books.manifest.records[path]?.evicted == true {
                books.pending[path] = nil
                return nil
            }
            if books.evicting.contains(id) { return false }
            books.uploading.insert(id)
            return true
        }
        guard let begun else { return }
        guard begun else {
            schedule(path, after: Self.debounce)  // after the eviction: evicted then, or changed
            return
        }
        defer { withBooks { _ = $0.uploading.remove(id) } }
        guard let current = try? file.status() else { return }
        let signature = CloudSignature(current)
        let done: Bool = withBooks { books in
            guard books.manifest.records[path]?.signature == signature else { return false }
            books.pending[path] = nil
            return true
        }
        if done { return }
        // A sparse clone's backing file has holes where it shares: its bytes go from a flat copy.
        var flat: FileDescriptor?
        if let sparse = mounted.clones.sparseFile(of: id) {
            guard let copy = Self.flatCopy(of: sparse, in: mounted.stateDirectory) else {
                schedule(path, after: Self.debounce)
                return
            }
            flat = copy
        }
        defer { flat?.closeQuietly() }
        let remoteStatus: stat
        do {
            // Checked again once copied, before the copy is moved into place:
            // a writer that opened meanwhile would have made it torn.
            remoteStatus = try remote.upload(flat ?? file, size: signature.size, mode: current.st_mode, to: path) {
                (try? file.status()).map(CloudSignature.init) == signature
            }
        } catch where error == .changedWhileCopied {
            schedule(path, after: Self.debounce)  // again, after its last close
            return
        } catch {
            failed(path, size: signature.size, error: error)
            return
        }
        guard let after = try? file.status(), CloudSignature(after) == signature else {
            schedule(path, after: Self.debounce)  // changed during the move: again
            return
        }
        withBooks { books in
            // Unmarked with the record, under one lock: an eviction that sees
            // it uploaded never finds it still being uploaded (the defer above
            // would unmark it only after the record could be read).
            books.uploading.remove(id)
            books.failures[path] = nil
            // A delete or rename of the path journalled since it was chosen
            // (`duePaths`) is applied after this copy landed, and may take
            // it: not recorded, it goes again once the journal is applied.
            if books.manifest.intents.touch(path) {
                books.pending[path] = min(books.pending[path] ?? .max, WallClock.nanoseconds())
                return
            }
            if books.pending[path] ?? .max <= WallClock.nanoseconds() { books.pending[path] = nil }
            guard books.paths[id] == path || books.paths[id] == nil else { return }  // renamed meanwhile: the rename carries it
            books.paths[id] = path
            books.manifest.records[path] = CloudRecord(signature: signature, evicted: false, remote: remoteStatus)
            save(books.manifest)
        }
    }

    private func failed(_ path: String, size: UInt64, error: CloudFailure) {
        let delay: UInt64 = withBooks { books in
            let count = (books.failures[path] ?? 0) + 1
            books.failures[path] = count
            let delay = CloudBackoff(base: Self.debounce, longest: Self.longestBackoff).delay(afterFailures: count)
            books.pending[path] = WallClock.nanoseconds() + delay
            return delay
        }
        logCloud(path: path, bytes: 0, size: size, reason: "upload-failed", action: "upload",
                 detail: "\(error); retrying in \(delay / 1_000_000_000) s")
    }

    func logCloud(path: String, bytes: UInt64, size: UInt64, reason: String, action: String, detail: String? = nil) {
        let now = WallClock.seconds()
        var line = "{\"time\":\(String(format3: now)),\"path\":\(JSONText.quoted(path)),\"bytes\":\(bytes),"
            + "\"size\":\(size),\"last_used\":\(String(format3: now)),\"reason\":\"\(reason)\",\"action\":\"\(action)\""
        if let detail { line += ",\"error\":\(JSONText.quoted(detail))" }
        mount.withLock { $0.log }?.appendLine(line + "}\n")
    }

    // MARK: Remote deletes and renames

    /// Applies the journalled intents, in order, once they are due; stops at
    /// the first that fails (said in the purge log once the worker runs:
    /// `logging`) and tries again after a backoff, as an upload does (not at
    /// every pass of the worker: a remote that is away would get a call, and
    /// the log a line, four times a second).
    func applyIntents(logging: Bool = true) {
        guard withBooks({ $0.intentsDue <= WallClock.nanoseconds() }) else { return }
        while !stopping.load(ordering: .acquiring), let intent = withBooks({ $0.manifest.intents.first }) {
            do {
                switch intent {
                case .remove(let path): try remote.remove(path)
                case .rename(let from, let to): try remote.rename(from, to: to)
                }
            } catch {
                let delay: UInt64 = withBooks { books in
                    books.intentFailures += 1
                    let delay = CloudBackoff(base: Self.debounce, longest: Self.longestBackoff).delay(afterFailures: books.intentFailures)
                    books.intentsDue = WallClock.nanoseconds() + delay
                    return delay
                }
                guard logging else { return }
                let path: String
                switch intent { case .remove(let p): path = p; case .rename(let p, _): path = p }
                logCloud(path: path, bytes: 0, size: 0, reason: "remote-failed", action: "sync",
                         detail: "\(error); retrying in \(delay / 1_000_000_000) s")
                return
            }
            withBooks { books in
                books.intentFailures = 0
                if books.manifest.intents.first == intent { books.manifest.intents.removeFirst() }
                save(books.manifest)
            }
        }
    }

    /// The identity of the file at `path` (relative to the container),
    /// whose backing file has `status`: a linked clone's own, not the
    /// backing file's its original has too.
    func identity(of path: String, status: stat) -> EntryID {
        guard let mounted, mounted.clones.sharesBacking(EntryID(status)) else { return EntryID(status) }
        let components = path.split(separator: "/").map(String.init)
        guard let leaf = components.last,
              let directory = try? CloudLocal.openDirectory(components.dropLast(), from: root, making: false)
        else { return EntryID(status) }
        defer { directory.closeQuietly() }
        guard let parent = try? directory.status() else { return EntryID(status) }
        return leaf.withCString { name in mounted.clones.identity(of: status, parent: EntryID(parent), name: name) }
    }

    /// Schedules every local file whose content the remote does not hold.
    func scheduleChanged() {
        let local = CloudLocal.scan(zones: zones, from: root)
        // Asked before the tier's lock is taken: a clone's asks the clone lock.
        let identities = local.map { path, status in (path, identity(of: path, status: status), status) }
        let now = WallClock.nanoseconds()
        withBooks { books in
            for (path, id, status) in identities {
                // A clone the walk at mount knew by its backing file is known by its own identity.
                if id != EntryID(status) && books.paths[EntryID(status)] == path { books.paths[EntryID(status)] = nil }
                books.paths[id] = path
                let record = books.manifest.records[path]
                if record?.signature != CloudSignature(status) && books.pending[path] == nil {
                    books.pending[path] = now
                }
            }
        }
        kick()
    }
}

extension String {
    /// Seconds with millisecond precision, as a JSON number.
    init(format3 value: Double) {
        let milliseconds = UInt64((value * 1000).rounded())
        let fraction = milliseconds % 1000
        self = "\(milliseconds / 1000).\(fraction < 10 ? "00" : fraction < 100 ? "0" : "")\(fraction)"
    }
}

/// One read of a remote copy's status (`CloudTier.probe`): every caller
/// that joins it waits for its answer, each up to its own deadline.
final class StatusRead: Sendable {
    private let outcome = Mutex<Result<stat?, CloudFailure>?>(nil)
    private let done = DispatchGroup()

    init() { done.enter() }

    /// Keeps `answer`, runs `forget` (which takes the read out of the
    /// books: a caller from now on begins another), then wakes the callers.
    func finish(_ answer: Result<stat?, CloudFailure>, forget: () -> Void) {
        outcome.withLock { $0 = answer }
        forget()
        done.leave()
    }

    /// The answer, or nil when none came before `deadline`.
    func answer(before deadline: DispatchTime) -> Result<stat?, CloudFailure>? {
        guard done.wait(timeout: deadline) == .success else { return nil }
        return outcome.withLock { $0 }
    }
}
