import Dispatch
import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// The tier's events from the passthrough (it is an observer:
/// `CloudTier+Observing`), and eviction and download.
extension CloudTier {
    /// The path of a directory relative to the container, "" for the root.
    private func directoryPath(_ id: EntryID) -> String? {
        mounted?.state.read { _, names in names.path(of: id) } ?? nil
    }

    private func joined(_ directory: String, _ name: CName) -> String {
        let leaf = String(cString: name)
        return directory.isEmpty ? leaf : directory + "/" + leaf
    }

    func isUbiquitous(_ path: String) -> Bool { CloudZones.contains(zones, path) }

    /// A regular file was created (or opened by create) as `name` in `parent`.
    /// Recorded by its backing identity (`EntryID(status)`), not `id`.
    func created(_ status: stat, id: EntryID, name: CName, in parent: EntryID, opened: Bool) {
        guard status.st_mode & S_IFMT == S_IFREG, let directory = directoryPath(parent) else { return }
        let path = joined(directory, name)
        guard isUbiquitous(path) else { return }
        withBooks { $0.paths[EntryID(status)] = path }
    }

    /// A file was closed: upload it after the debounce if it changed.
    func closed(_ id: EntryID) {
        guard let path = withBooks({ $0.paths[id] }) else { return }
        schedule(path, after: Self.debounce)
        kick()
    }

    /// `name` in `parent` was removed.
    func removed(_ status: stat, id: EntryID, name: CName, from parent: EntryID) {
        guard let directory = directoryPath(parent) else { return }
        let path = joined(directory, name)
        let kind = status.st_mode & S_IFMT
        guard kind == S_IFREG || kind == S_IFDIR, isUbiquitous(path) || zones.contains(path) else { return }
        withBooks { books in
            let prefix = path + "/"
            let gone = books.manifest.records.keys.filter { $0 == path || $0.hasPrefix(prefix) }
            for key in gone { books.manifest.records[key] = nil }
            for (id, known) in books.paths where known == path || known.hasPrefix(prefix) { books.paths[id] = nil }
            for key in books.pending.keys where key == path || key.hasPrefix(prefix) { books.pending[key] = nil }
            books.manifest.intents.append(.remove(path))
            save(books.manifest)
        }
        kick()
    }

    /// `name` in `parent` became `newName` in `newParent`.
    func moved(_ status: stat, id: EntryID, name: CName, from parent: EntryID, newName: CName, to newParent: EntryID) {
        guard let fromDirectory = directoryPath(parent), let toDirectory = directoryPath(newParent) else { return }
        let from = joined(fromDirectory, name)
        let to = joined(toDirectory, newName)
        let kind = status.st_mode & S_IFMT
        guard kind == S_IFREG || kind == S_IFDIR else { return }
        let fromInZone = isUbiquitous(from) || zones.contains(from)
        let toInZone = isUbiquitous(to) || zones.contains(to)
        guard fromInZone || toInZone else { return }
        withBooks { books in
            let prefix = from + "/"
            func renamed(_ key: String) -> String? {
                key == from ? to : key.hasPrefix(prefix) ? to + key.dropFirst(from.count) : nil
            }
            var moved: [String: CloudRecord] = [:]
            for (key, record) in books.manifest.records {
                if let new = renamed(key) { books.manifest.records[key] = nil; moved[new] = record }
            }
            for (id, key) in books.paths { if let new = renamed(key) { books.paths[id] = toInZone ? new : nil } }
            for (key, due) in books.pending {
                if let new = renamed(key) { books.pending[key] = nil; if toInZone { books.pending[new] = due } }
            }
            if fromInZone && toInZone {
                for (key, record) in moved { books.manifest.records[key] = record }
                books.manifest.intents.append(.rename(from, to))
            } else if fromInZone {
                books.manifest.intents.append(.remove(from))
            }
            save(books.manifest)
        }
        if toInZone && !fromInZone { scheduleChanged() }
        kick()
    }

    // MARK: Attributes

    private func stateOf(_ inode: Inode) throws(Errno) -> (path: String, status: stat, record: CloudRecord?) {
        guard inode.isRegularFile, let path = withBooks({ $0.paths[inode.key] }) else { throw Errno.noData }
        let status = try inode.withDescriptor { (file) throws(Errno) in try file.status() }
        return (path, status, withBooks { $0.manifest.records[path] })
    }

    func isUbiquitous(_ inode: Inode) -> Bool {
        inode.isRegularFile && withBooks { $0.paths[inode.key] != nil }
    }

    /// Whether a journalled delete or rename still to apply removes `path`,
    /// renames it or renames something onto it (the intents' `touch`): its
    /// copy under the name is about to change, so it reads as not uploaded
    /// and is not evicted until the journal is applied.
    func hasPendingIntent(_ path: String) -> Bool {
        withBooks { $0.manifest.intents.touch(path) }
    }

    func isUploaded(_ inode: Inode) throws(Errno) -> Bool {
        let (path, status, record) = try stateOf(inode)
        // A rename or delete that names the path and has not reached the
        // remote yet may still move another copy over it (and `evict`
        // refuses until it has).
        return record?.signature == CloudSignature(status) && !hasPendingIntent(path)
    }

    /// `not_downloaded` when evicted; `downloaded` while the remote holds
    /// another version than the local one (another device's); else `current`.
    func downloadStatus(_ inode: Inode) throws(Errno) -> String {
        let (path, _, record) = try stateOf(inode)
        guard let record else { return "current" }
        if record.evicted { return "not_downloaded" }
        if let now = remoteStatus(path), record.isNewer(now) { return "downloaded" }
        return "current"
    }

    /// The remote copy's status, waiting at most `statusDeadline` for a
    /// remote that hangs; nil then, as for one that cannot be reached. One
    /// read per path at a time, so a hung remote does not gather threads.
    private func remoteStatus(_ path: String) -> stat? {
        guard let answer = probe(path, deadlineMilliseconds: Self.statusDeadlineMilliseconds) else {
            Diagnostics.note("cloud: the remote did not say within \(Self.statusDeadlineMilliseconds) ms whether \(path) changed")
            return nil
        }
        return (try? answer.get()) ?? nil
    }

    /// The remote copy's status (nil: there is none), or why the remote
    /// could not say; nil when no answer came within the deadline. One read
    /// per path at a time, on a global queue, so a remote that hangs gathers
    /// no threads: a caller that finds one under way waits for it (holding
    /// nothing of its own) and takes its answer only if it began after the
    /// caller asked; one that began before may have been asked before the
    /// copy was there (an upload recorded since), so the caller waits for
    /// its end and then reads, or joins the read begun after it.
    private func probe(_ path: String, deadlineMilliseconds: Int) -> Result<stat?, CloudFailure>? {
        let deadline = DispatchTime.now() + .milliseconds(deadlineMilliseconds)
        var waitedForAnEarlierRead = false
        while true {
            let (read, began) = withBooks { books -> (StatusRead, Bool) in
                if let read = books.probing[path] { return (read, false) }
                let read = StatusRead()
                books.probing[path] = read
                return (read, true)
            }
            if began {
                DispatchQueue.global().async { [self] in
                    let status = Result { () throws(CloudFailure) -> stat? in try remote.copyStatus(path) }
                    read.finish(status) { withBooks { books in if books.probing[path] === read { books.probing[path] = nil } } }
                }
            }
            guard let answer = read.answer(before: deadline) else { return nil }
            if began || waitedForAnEarlierRead { return answer }
            // Begun before this call: the next one under way began after it.
            waitedForAnEarlierRead = true
        }
    }

    /// How long reading `download_status` waits for the remote.
    static let statusDeadlineMilliseconds = 2000

    /// How long an eviction waits for the remote to show its copy.
    static let evictionCheckMilliseconds = 10_000

    // MARK: The remote copy, before an eviction

    /// Whether the remote holds the copy of `path` that `record` says was
    /// uploaded (`CloudRecord.isHeld`), asked before any eviction drops the
    /// only local data, whatever the bookkeeping says. Called holding
    /// nothing a request needs (not `transfers`, but from `room`, inside a
    /// download that holds it across its own remote calls anyway), the
    /// remote asked on a global queue for at most `evictionCheckMilliseconds`.
    /// Not while a journalled delete or rename of the path is still to
    /// apply: the copy under the name is about to change. A remote that
    /// cannot be asked refuses the eviction; one that holds no such copy
    /// refuses it too, and the document is marked not uploaded (its record
    /// dropped) and uploaded again, in one line of the daemon log.
    func remoteHoldsCopy(_ path: String, of record: CloudRecord) -> Bool {
        if hasPendingIntent(path) {
            Diagnostics.note("cloud: \(path) cannot be evicted now: a delete or rename of its remote copy is still to apply")
            return false
        }
        guard let answer = probe(path, deadlineMilliseconds: Self.evictionCheckMilliseconds) else {
            Diagnostics.note("cloud: \(path) cannot be evicted now: the remote did not show its copy within \(Self.evictionCheckMilliseconds) ms")
            return false
        }
        let copy: stat?
        switch answer {
        case .success(let status): copy = status
        case .failure(let error):
            Diagnostics.note("cloud: \(path) cannot be evicted now: its remote copy cannot be checked: \(error)")
            return false
        }
        if record.isHeld(by: copy.map(CloudSignature.init)) { return true }
        let now = WallClock.nanoseconds()
        withBooks { books in
            guard books.manifest.records[path] == record else { return }  // changed meanwhile: uploaded anew, or gone
            books.manifest.records[path] = nil
            books.pending[path] = now
            save(books.manifest)
        }
        kick()
        let found = copy.map { "a copy of \($0.st_size) bytes, not of its size," } ?? "no copy"
        Diagnostics.note("cloud: \(path) cannot be evicted now: the remote holds \(found) where its upload was recorded; it is uploaded again")
        return false
    }

    // MARK: Evict and download

    /// Drops the local data of an uploaded file that is not open and not
    /// changed since: `EINVAL` outside the zones, `EBUSY` otherwise
    /// (`refusal` says why, and `user.purgefs.evictable` tells). A linked
    /// clone member whose data others share leaves it to them first
    /// (`leaveSharedData`: nothing copied, nothing freed); the data lock it
    /// takes comes before `transfers`.
    func evict(_ inode: Inode, reason: String = "manual") throws(Errno) {
        guard inode.isRegularFile, withBooks({ $0.paths[inode.key] != nil }) else { throw Errno.invalidArgument }
        guard let mounted else { throw Errno.busy }  // not mounted
        // The remote's copy is checked first, holding nothing (the checks
        // below, under `transfers`, say why a file is refused otherwise).
        let checked: CloudRecord? = try {() throws(Errno) -> CloudRecord? in
            let (path, status, record) = try stateOf(inode)
            guard let record, !record.evicted, refusal(inode, status: status, record: record) == nil else { return nil }
            guard remoteHoldsCopy(path, of: record) else { throw Errno.busy }
            return record
        }()
        try mounted.clones.withDataHeld(of: inode) { () throws(Errno) in try transfers.withLock { () throws(Errno) in
            let (path, status, record) = try stateOf(inode)
            if let refusal = refusal(inode, status: status, record: record) {
                Diagnostics.note("cloud: \(path) cannot be evicted now: \(refusal.explanation)")
                throw Errno.busy
            }
            guard let record, !record.evicted else { return }
            guard record == checked, !hasPendingIntent(path) else {
                Diagnostics.note("cloud: \(path) cannot be evicted now: it changed while its remote copy was checked")
                throw Errno.busy
            }
            if let refusal = beginEviction(inode.key) {
                Diagnostics.note("cloud: \(path) cannot be evicted now: \(refusal.explanation)")
                throw Errno.busy
            }
            defer { endEviction(inode.key) }
            let file = try inode.withDescriptor { (path) throws(Errno) in try path.reopen(flags: O_WRONLY) }
            defer { file.closeQuietly() }
            // Looked at again now that no open can begin unseen: one that
            // ended since the check above counts as open, or has changed it.
            let now = try file.status()
            if let refusal = refusal(inode, status: now, record: record, countingOpensUnderWay: false) {
                Diagnostics.note("cloud: \(path) cannot be evicted now: \(refusal.explanation)")
                throw Errno.busy
            }
            guard mounted.clones.sharesBacking(EntryID(now)) else {
                _ = try dropData(of: file, path: path, status: now, reason: reason)
                return
            }
            _ = try leaveAndDrop(inode, path: path, status: now, record: record, reason: reason, mounted: mounted)
        } }
    }

    /// Evicts a linked clone member whose data is shared: it leaves the
    /// data to the other names (its own empty file, under its name), which
    /// becomes its placeholder: the data's size, the member's own times.
    /// Frees nothing while others share the data, all of it when none did
    /// (a member whose original is gone). Recorded evicted first, with the
    /// placeholder's signature: killed once the member left the data, the
    /// next mount makes the hole (`restoreHole`, same inode); killed before,
    /// its name still reads the data and is uploaded as it is (another inode).
    private func leaveAndDrop(
        _ inode: Inode, path: String, status: stat, record: CloudRecord, reason: String, mounted: CloudMount
    ) throws(Errno) -> UInt64 {
        // A sparse clone frees its own blocks, whatever it shares.
        let othersShare = !mounted.clones.isSparse(inode.key) && mounted.clones.sharedBytes(of: inode.key) > 0
        let shown = mounted.clones.present(status, as: inode.key)
        var evicted = record
        evicted.signature = CloudSignature(shown)
        evicted.evicted = true
        withBooks { books in
            books.manifest.records[path] = evicted
            save(books.manifest)
        }
        do throws(Errno) {
            guard try mounted.leaveSharedData(inode) else { throw Errno.busy }
            let own = try inode.withDescriptor { (path) throws(Errno) in try path.reopen(flags: O_WRONLY) }
            defer { own.closeQuietly() }
            try own.truncate(to: Int64(status.st_size))
            var placeholder = try own.status()
            placeholder.st_atim = shown.st_atim
            placeholder.st_mtim = shown.st_mtim
            return try dropData(of: own, path: path, status: placeholder, reason: reason,
                                freed: othersShare ? 0 : UInt64(status.st_blocks) * 512)
        } catch {
            let left = (try? CloudLocal.open(path, from: root, flags: OpenFlags.path)).map { file in
                defer { file.closeQuietly() }
                return (try? file.status()).map { UInt64($0.st_ino) == inode.key.inode } ?? false
            } ?? false
            if left, let hole = try? CloudLocal.restoreHole(path, like: evicted.signature, from: root) {
                // Its own file already: the placeholder, as the next mount would make it.
                mounted.events.resized(hole, id: inode.key)
                tellKernel(hole)
            } else if !left {
                withBooks { books in
                    guard books.manifest.records[path] == evicted else { return }
                    books.manifest.records[path] = record
                    save(books.manifest)
                }
            }
            throw error
        }
    }

    /// Marks `id` as being evicted, unless an open of it is under way
    /// (between its `beginOpen` and `endOpen`: `.open`) or an upload
    /// (`.changed`: its content is not on the remote yet). From here to
    /// `endEviction` every open of it waits for the eviction (it takes
    /// `transfers`, which the eviction holds) and then downloads, so no
    /// open sees the file while its data is dropped, and no upload begins.
    /// Whatever the eviction checks after this (open, changed) cannot
    /// change unseen.
    private func beginEviction(_ id: EntryID) -> EvictionRefusal? {
        withBooks { books in
            if (books.opening[id] ?? 0) > 0 { return .open }
            if books.uploading.contains(id) { return .changed }
            books.evicting.insert(id)
            return nil
        }
    }

    private func endEviction(_ id: EntryID) {
        withBooks { _ = $0.evicting.remove(id) }
    }

    /// `user.purgefs.evictable`: `1` when `evict` would drop the data now,
    /// `evicted` when it is gone already, else the refusal's name.
    func evictability(_ inode: Inode) throws(Errno) -> String {
        let (_, status, record) = try stateOf(inode)
        if let refusal = refusal(inode, status: status, record: record) { return refusal.rawValue }
        return record?.evicted == true ? EvictionRefusal.evictedValue : EvictionRefusal.evictableValue
    }

    /// Why `evict` must refuse the file now, in `EvictionRefusal`'s order;
    /// nil when it may go on (an evicted file included: nothing to do).
    /// `countingOpensUnderWay` false: once the eviction has begun
    /// (`beginEviction`), an open under way waits for it and is no reason.
    private func refusal(_ inode: Inode, status: stat, record: CloudRecord?, countingOpensUnderWay: Bool = true) -> EvictionRefusal? {
        guard let record else { return .notUploaded }
        guard record.signature == CloudSignature(status) else { return .changed }
        if record.evicted { return nil }
        guard let mounted else { return .open }  // not mounted: nothing may go
        let open = mounted.state.read { ledger, _ in (try? ledger.file(inode.key).openCount) ?? 0 }
        let beingOpened = countingOpensUnderWay && withBooks { ($0.opening[inode.key] ?? 0) > 0 }
        if open > 0 || beingOpened { return .open }
        // Data a linked clone's primary shares is its members' too (a member
        // leaves it to the others first: `leaveAndDrop`).
        if mounted.clones.evictionDropsShared(inode.key, backing: EntryID(status)) { return .shared }
        return nil
    }

    /// Makes the file a hole of the same size and times, records it evicted
    /// and logs it. Called holding `transfers`. Returns the bytes freed
    /// (`freed` when the caller knows better: data a member left): its
    /// allocation less what it shares with reflinked clones, which keep it.
    private func dropData(of file: FileDescriptor, path: String, status: stat, reason: String, freed: UInt64? = nil) throws(Errno) -> UInt64 {
        // Data a linked clone shares is other files' too.
        guard let mounted, !mounted.clones.sharesBacking(EntryID(status)) else { throw Errno.busy }
        let allocated = UInt64(status.st_blocks) * 512
        let freed = freed ?? allocated - min(allocated, mounted.clones.sharedBytes(of: EntryID(status)))
        try Self.dropBlocks(of: file, size: Int64(status.st_size))
        try file.setTimes(access: status.st_atim, modification: status.st_mtim)
        try file.sync()
        let after = try file.status()
        withBooks { books in
            var record = books.manifest.records[path] ?? CloudRecord(signature: CloudSignature(after), evicted: true)
            record.signature = CloudSignature(after)
            record.evicted = true
            books.manifest.records[path] = record
            save(books.manifest)
        }
        mounted.events.resized(after, id: EntryID(after))
        tellKernel(after)
        logCloud(path: path, bytes: freed, size: UInt64(status.st_size), reason: reason, action: "evict")
        return freed
    }

    /// Frees every block of `file`, keeping its size `size`: punched where
    /// the backing filesystem can, so the size never reads 0 meanwhile (a
    /// `stat` then would leave the kernel a size of 0 for the file); else
    /// truncated to 0 and back.
    private static func dropBlocks(of file: FileDescriptor, size: Int64) throws(Errno) {
        // Past the end in whole 64 KiB: a block the end shares is freed too.
        let length = (max(size, 1) + 0xFFFF) & ~0xFFFF
        do throws(Errno) { try file.punchHole(offset: 0, length: length) } catch where error == .notSupported {
            try file.truncate(to: 0)
            try file.truncate(to: size)
        }
    }

    /// With `optimize_storage`: evicts uploaded documents that are not open,
    /// least recently used first, until `bytes` are freed. Returns bytes freed.
    func evictForSpace(_ bytes: UInt64, reason: String, holdingTransfers: Bool = false) -> UInt64 {
        guard optimizeStorage, let mounted else { return 0 }
        let candidates: [(EntryID, String)] = withBooks { books in
            books.paths.compactMap { (id, path) in
                // A clone's record has its backing file's inode: `evictOne` checks the identity.
                guard let record = books.manifest.records[path], !record.evicted, (books.opening[id] ?? 0) == 0
                else { return nil }
                return (id, path)
            }
        }
        let ordered: [(EntryID, String)] = mounted.state.read { ledger, _ in
            candidates.compactMap { (id, path) -> (UInt64, EntryID, String)? in
                guard let info = try? ledger.file(id), info.openCount == 0 else { return nil }
                return (info.lastUsed, id, path)
            }.sorted { ($0.0, $0.2) < ($1.0, $1.2) }.map { ($0.1, $0.2) }
        }
        var freed: UInt64 = 0
        for (id, path) in ordered where freed < bytes {
            // The remote's copy is checked before `transfers` is taken (unless held already: `room`).
            guard let checked = withBooks({ $0.manifest.records[path] }), !checked.evicted,
                  remoteHoldsCopy(path, of: checked)
            else { continue }
            let evictOne = { [self] () -> UInt64 in
                guard let file = try? CloudLocal.open(path, from: root, flags: O_WRONLY | O_NONBLOCK) else { return 0 }
                defer { file.closeQuietly() }
                guard beginEviction(id) == nil else { return 0 }
                defer { endEviction(id) }
                guard let status = try? file.status(), identity(of: path, status: status) == id,
                      let record = withBooks({ $0.manifest.records[path] }), record == checked,
                      !hasPendingIntent(path),
                      record.signature == CloudSignature(status), !record.evicted,
                      mounted.state.read({ ledger, _ in (try? ledger.file(id).openCount) ?? 1 }) == 0
                else { return 0 }
                guard mounted.clones.sharesBacking(EntryID(status)) else {
                    return (try? dropData(of: file, path: path, status: status, reason: reason)) ?? 0
                }
                // A clone member leaves the shared data to the others; its data
                // lock only if free: this holds `transfers`, and a break's room
                // search (this thread's, maybe) holds a data lock and waits for it.
                guard !mounted.clones.evictionDropsShared(id, backing: EntryID(status)),
                      let inode = mounted.existing(id)
                else { return 0 }
                let freed = try? mounted.clones.withDataHeldIfFree(of: inode) { () throws(Errno) -> UInt64 in
                    try leaveAndDrop(inode, path: path, status: status, record: record, reason: reason, mounted: mounted)
                }
                return (freed ?? nil) ?? 0
            }
            freed += holdingTransfers ? evictOne() : transfers.withLock(evictOne)
        }
        return freed
    }

    /// Asks for a background download of an evicted file.
    func requestDownload(_ inode: Inode) throws(Errno) {
        guard inode.isRegularFile, withBooks({ $0.paths[inode.key] != nil }) else { throw Errno.invalidArgument }
        withBooks { _ = $0.downloads.insert(inode.key) }
        kick()
    }

    /// Called by `open` before it opens the backing file: downloads an evicted
    /// file first. Pair with `endOpen`.
    func beginOpen(_ inode: Inode) throws(Errno) {
        guard inode.isRegularFile else { return }
        let known = withBooks { books -> Bool in
            guard books.paths[inode.key] != nil else { return false }
            books.opening[inode.key, default: 0] += 1
            return true
        }
        guard known else { return }
        do { try download(inode.key, inode: inode) } catch {
            endOpen(inode)
            throw error
        }
    }

    func endOpen(_ inode: Inode) {
        withBooks { books in
            guard let count = books.opening[inode.key] else { return }
            books.opening[inode.key] = count > 1 ? count - 1 : nil
        }
    }

    /// Brings an evicted file's data back from the remote, making room
    /// first like any write (purging; `ENOSPC` when nothing is left). An
    /// unreachable remote is `EIO`, with the reason in the log.
    func download(_ id: EntryID, inode: Inode?) throws(Errno) {
        // Most opens find local data: they do not wait for another file's transfer.
        // One that finds its file being evicted waits for the eviction, then downloads.
        let evicted = withBooks { books in
            books.evicting.contains(id) || books.paths[id].flatMap { books.manifest.records[$0] }?.evicted == true
        }
        guard evicted else { return }
        guard let inode else { return try downloadNow(id, inode: nil) }
        // An open waits a bounded time: a remote that hangs fails it with EIO
        // while the transfer goes on (or fails) in the background.
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<Errno?>(nil)
        DispatchQueue.global().async { [self] in
            do throws(Errno) { try downloadNow(id, inode: inode) } catch { outcome.withLock { $0 = error } }
            done.signal()
        }
        guard done.wait(timeout: .now() + .seconds(Self.downloadDeadline)) == .success else {
            let path = withBooks { $0.paths[id] } ?? "?"
            logCloud(path: path, bytes: 0, size: 0, reason: "download-failed", action: "download",
                     detail: "the remote did not answer within \(Self.downloadDeadline) s")
            throw Errno.ioError
        }
        if let error = outcome.withLock({ $0 }) { throw error }
    }

    /// How long an open waits for its download: `PURGEFS_DOWNLOAD_TIMEOUT`
    /// seconds in the daemon's environment, 30 by default.
    static let downloadDeadline: Int = {
        guard let text = CurrentProcess.environmentValue("PURGEFS_DOWNLOAD_TIMEOUT"),
              let seconds = Int(text), seconds > 0 else { return 30 }
        return seconds
    }()

    private func downloadNow(_ id: EntryID, inode: Inode?) throws(Errno) {
        guard let mounted else { throw Errno.ioError }  // not mounted
        try transfers.withLock { () throws(Errno) in
            guard let path = withBooks({ $0.paths[id] }),
                  let record = withBooks({ $0.manifest.records[path] }), record.evicted
            else { return }
            let file: FileDescriptor
            if let inode {
                file = try inode.withDescriptor { (path) throws(Errno) in try path.reopen(flags: O_WRONLY) }
            } else {
                file = try CloudLocal.open(path, from: root, flags: O_WRONLY | O_NONBLOCK)
            }
            defer { file.closeQuietly() }
            let status = try file.status()
            guard CloudSignature(status) == record.signature else { throw Errno.busy }
            let source: any CloudDownload
            do throws(CloudFailure) {
                source = try remote.download(path)
            } catch {
                logCloud(path: path, bytes: 0, size: UInt64(status.st_size), reason: "download-failed", action: "download",
                         detail: "\(error)")
                throw Errno.ioError
            }
            defer { source.close() }
            let remoteStatus = source.status
            // Another device's newer version comes with its own size and time.
            let newer = record.isNewer(remoteStatus)
            let size = UInt64(remoteStatus.st_size)
            let reserved = try room(for: (size + 4095) / 4096 * 4096)
            defer { mounted.state.release(reserved) }
            var logged = false
            do throws(Errno) {
                if size != UInt64(status.st_size) { try file.truncate(to: Int64(size)) }
                do throws(CloudFailure) { try source.copy(to: file, size: size) } catch {
                    logCloud(path: path, bytes: 0, size: size, reason: "download-failed", action: "download", detail: "\(error)")
                    logged = true
                    throw error.errno == .noSpace ? Errno.noSpace : Errno.ioError
                }
                try file.setTimes(access: status.st_atim, modification: newer ? remoteStatus.st_mtim : status.st_mtim)
                try file.sync()
            } catch {
                if !logged { logCloud(path: path, bytes: 0, size: size, reason: "download-failed", action: "download", detail: "\(error)") }
                // Back to no data: a partial download is never taken for the file.
                if UInt64(status.st_size) != size { try? file.truncate(to: Int64(status.st_size)) }
                try? Self.dropBlocks(of: file, size: Int64(status.st_size))
                try? file.setTimes(access: status.st_atim, modification: status.st_mtim)
                if let after = try? file.status() { mounted.events.resized(after, id: EntryID(after)) }
                throw error == .noSpace ? Errno.noSpace : Errno.ioError
            }
            let after = try file.status()
            mounted.events.resized(after, id: EntryID(after))
            withBooks { books in
                books.manifest.records[path] = CloudRecord(signature: CloudSignature(after), evicted: false, remote: remoteStatus)
                save(books.manifest)
            }
            tellKernel(after)
        }
    }

    /// Drops the kernel's cached attributes and pages of the file: its
    /// allocation changed behind its back.
    private func tellKernel(_ status: stat) {
        guard let mounted else { return }
        if let node = mounted.kernelNode(EntryID(status)) { mounted.notifier.send(.dataChanged(node)) }
    }

    /// Reserves `need` bytes, purging first when they do not fit, then
    /// (`optimize_storage`) evicting other documents one at a time. Called
    /// holding `transfers`.
    private func room(for need: UInt64) throws(Errno) -> UInt64 {
        guard let mounted else { throw Errno.noSpace }
        // Not `needsRoom`: this tier's eviction must know `transfers` is held.
        let reserved = RoomSearch.run(
            ask: { mounted.state.room(for: need) }, purge: { mounted.purger.purge(.bytes($0), reason: .write) },
            evict: { evictForSpace(1, reason: "write", holdingTransfers: true) })
        guard let reserved else { throw Errno.noSpace }
        return reserved
    }
}
