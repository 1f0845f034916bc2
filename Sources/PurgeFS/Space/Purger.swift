import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// Carries out purges: asks the planner for victims, removes them from the
/// backing store safely, and reports back to the ledger, the log, the
/// counters and the kernel.
///
/// Safety: a victim is reached only through its directory, opened by walking
/// recorded names down from the root with `O_NOFOLLOW` and checking each
/// step's identity; its name is found by listing that directory and
/// matching the inode number; and under the directory's namespace lock the
/// name is checked again (`fstatat`, no follow) and the ledger asked whether
/// the file is still a candidate, just before `unlinkat`. A symlink in a zone
/// is never a candidate; a directory is never removed.
final class Purger: Sendable {
    private let state: ContainerState
    private let clones: any CloneBackend
    private let root: FileDescriptor
    private let locks: NamespaceLocks
    private let notifier: KernelNotifier
    private let inodes: InodeTable
    private let log: PurgeLog
    private let stateDirectory: StateDirectory
    /// One purge at a time: the monitor, writes and manual purges take turns.
    private let serial = ThreadLock()
    private let countersChanged = Atomic<Bool>(false)
    /// Victims removed before their log lines are written and synced: one
    /// sync per batch, so large purges run near the speed of plain unlinks.
    static let batchSize = 4096

    init(state: ContainerState, clones: any CloneBackend, root: FileDescriptor, locks: NamespaceLocks, notifier: KernelNotifier,
         inodes: InodeTable, log: PurgeLog, stateDirectory: StateDirectory) {
        self.state = state
        self.clones = clones
        self.root = root
        self.locks = locks
        self.notifier = notifier
        self.inodes = inodes
        self.log = log
        self.stateDirectory = stateDirectory
    }

    /// Purges toward `goal`, least recently used first; returns the bytes freed.
    @discardableResult
    func purge(_ goal: PurgeGoal, reason: PurgeLog.Reason) -> UInt64 {
        serial.withLock {
            // The totals are written once the purge is done (the log, synced
            // per batch, is the record of each file).
            defer { saveCounters() }
            var freed: UInt64 = 0
            var skipped: Set<EntryID> = []
            while true {
                let remaining: PurgeGoal
                switch goal {
                case .all: remaining = .all
                case .bytes(let need):
                    guard freed < need else { return freed }
                    remaining = .bytes(need - freed)
                }
                let plan = state.read { ledger, _ in PurgePlanner.plan(remaining, in: ledger, excluding: skipped) }
                guard !plan.victims.isEmpty else { return freed }
                var progress = false
                // In batches, each settled (logged, synced, counted) before the next
                // starts: a crash loses the log lines of at most one batch.
                var start = 0
                while start < plan.victims.count {
                    let batch = Array(plan.victims[start..<min(start + Self.batchSize, plan.victims.count)])
                    start += batch.count
                    let outcome = execute(batch, reason: reason)
                    freed = freed.addingClamped(outcome.freed)
                    skipped.formUnion(outcome.skipped)
                    progress = progress || outcome.purged > 0 || !outcome.skipped.isEmpty
                }
                if !progress { return freed }
            }
        }
    }

    private struct Outcome {
        var freed: UInt64 = 0
        var purged = 0
        var skipped: Set<EntryID> = []
    }

    /// A name of a victim that was removed (or the file truncated through it).
    private struct Done {
        var victim: Int
        var directory: EntryID
        var name: [CChar]
        /// Relative to the container, as it was when the name was removed.
        var path: String
        /// The names its data kept after this one went, outside those the
        /// ledger knows (a hard link elsewhere); 0 for a linked clone, whose
        /// shared data its group accounts for.
        var linksLeft: UInt64
    }

    private func execute(_ victims: [PurgeVictim], reason: PurgeLog.Reason) -> Outcome {
        // Which victims to look for in which directory: every name of a file
        // to delete, one name of a file to truncate.
        var work: [EntryID: [Int]] = [:]
        var order: [EntryID] = []
        for (index, victim) in victims.enumerated() {
            let directories = victim.action == .delete ? victim.directories : Array(victim.directories.prefix(1))
            for directory in directories {
                if work[directory] == nil { order.append(directory) }
                work[directory, default: []].append(index)
            }
        }
        var done: [Done] = []
        var approved: Set<Int> = []
        var refused: Set<Int> = []
        for directory in order {
            process(directory, victims: work[directory]!, of: victims, approved: &approved, refused: &refused, done: &done)
        }
        return settle(victims, done: done, refused: refused, reason: reason)
    }

    /// Finds and purges the victims' names in one directory, listing it once.
    private func process(
        _ directoryID: EntryID, victims indices: [Int], of victims: [PurgeVictim],
        approved: inout Set<Int>, refused: inout Set<Int>, done: inout [Done]
    ) {
        guard let chain = state.read({ _, names in names.components(of: directoryID) }),
              let directory = try? DirectoryNames.open(chain, from: root)
        else {
            refused.formUnion(indices)
            return
        }
        defer { directory.closeQuietly() }
        // By the inode number listings show: a linked clone's is its shared data's.
        var wanted: [UInt64: [Int]] = [:]
        for index in indices where victims[index].file.device == directoryID.device {
            wanted[clones.listedInode(of: victims[index].file), default: []].append(index)
        }
        // The listing takes no lock: each name found is checked again and
        // removed under the tree lock and the directory's stripe, taken for
        // that one name (the tree lock keeps directories from moving in or
        // out of a zone between the check and the unlink). A rename or create
        // waits for one unlink at most, never for a whole directory's.
        let path = state.read { _, names in names.path(of: directoryID) } ?? "?"
        guard let stream = try? DirectoryStream(directory) else {
            refused.formUnion(wanted.values.joined())
            return
        }
        while !wanted.isEmpty, let entry = try? stream.next() {
            guard wanted[entry.inode] != nil else { continue }
            let name = CNames.copy(entry.name)
            var outcome: (index: Int, removed: Bool, linksLeft: UInt64)?
            _ = try? locks.withTreeLock { () throws(Errno) in
                try locks.withLocks(directoryID) { () throws(Errno) in
                    outcome = purgeEntry(name, inode: entry.inode, in: directory, directoryID: directoryID,
                                         wanted: wanted, victims: victims, approved: &approved, refused: &refused)
                }
            }
            guard let (index, removed, linksLeft) = outcome else { continue }
            if removed {
                let file = String(cString: name)
                done.append(Done(victim: index, directory: directoryID, name: name, path: path.isEmpty ? file : path + "/" + file,
                                 linksLeft: linksLeft))
            }
            wanted[entry.inode]!.removeAll { $0 == index }
            if wanted[entry.inode]!.isEmpty { wanted[entry.inode] = nil }
        }
    }

    /// Under the tree lock and the directory's stripe: checks that `name`
    /// still holds one of the victims listed under its inode number, and
    /// purges it. Nil when it holds none of them; else the victim, whether
    /// it was removed (refused ones are added to `refused`), and the links
    /// its data had left after it (see `Done.linksLeft`).
    private func purgeEntry(
        _ name: [CChar], inode: UInt64, in directory: FileDescriptor, directoryID: EntryID, wanted: [UInt64: [Int]],
        victims: [PurgeVictim], approved: inout Set<Int>, refused: inout Set<Int>
    ) -> (Int, Bool, UInt64)? {
        guard let candidates = wanted[inode],
              let status = try? directory.status(of: name), status.st_mode & S_IFMT == S_IFREG
        else { return nil }
        let id = clones.identity(of: status, parent: directoryID, name: name)
        guard let index = candidates.first(where: { victims[$0].file == id }) else { return nil }
        let victim = victims[index]
        // More links than the ledger knows: the file has names outside
        // the container, whose data a truncation would destroy; so has
        // data a linked clone shares.
        if victim.action == .truncate
            && (Int(status.st_nlink) > victim.directories.count || clones.sharesBacking(EntryID(status))) {
            refused.insert(index)
            return (index, false, 0)
        }
        if !approved.contains(index) {
            guard !refused.contains(index), state.read({ ledger, _ in ledger.canPurge(victim) }) else {
                refused.insert(index)
                return (index, false, 0)
            }
            approved.insert(index)
        }
        if (try? remove(name, in: directory, as: victim)) != nil {
            let shared = clones.sharesBacking(EntryID(status))
            return (index, true, victim.action == .delete && !shared ? UInt64(max(1, status.st_nlink)) - 1 : 0)
        }
        refused.insert(index)
        return (index, false, 0)
    }

    private func remove(_ name: CName, in directory: FileDescriptor, as victim: PurgeVictim) throws(Errno) {
        switch victim.action {
        case .delete:
            try directory.unlink(name)
        case .truncate:
            let file = try FileDescriptor.open(name, in: directory, flags: O_WRONLY | O_NOFOLLOW | O_NONBLOCK)
            defer { file.closeQuietly() }
            let status = try file.status()
            guard EntryID(status) == victim.file, Int(status.st_nlink) <= victim.directories.count else {
                throw Errno.noEntry
            }
            try file.truncate(to: 0)
        }
    }

    /// Reports what was done to the ledger, the counters, the log and the kernel.
    private func settle(_ victims: [PurgeVictim], done: [Done], refused: Set<Int>, reason: PurgeLog.Reason) -> Outcome {
        var outcome = Outcome()
        var namesDone: [Int: [Done]] = [:]
        for item in done { namesDone[item.victim, default: []].append(item) }
        let now = WallClock.seconds()
        var records: [PurgeLog.Record] = []
        var freedFiles: UInt64 = 0
        for (index, names) in namesDone.sorted(by: { $0.key < $1.key }) {
            let victim = victims[index]
            let complete = victim.action == .truncate || names.count == victim.directories.count
            // Every name the ledger knew is gone, but a hard link outside them keeps the data: no space was freed.
            let linksLeft = complete ? names.map(\.linksLeft).min() ?? 0 : 0
            let freed = linksLeft > 0 ? 0 : victim.bytes
            state.recordPurge(victim, removedFrom: names.map(\.directory), complete: complete, freed: freed)
            // A purged clone: the rest of its group is charged anew.
            clones.purged(victim.file)
            let path = names[0].path
            if complete {
                outcome.freed = outcome.freed.addingClamped(freed)
                outcome.purged += 1
                freedFiles += 1
                records.append(PurgeLog.Record(
                    time: now, path: path, bytes: freed, size: victim.size,
                    lastUsed: Double(victim.lastUsed) / 1e9, reason: reason, action: victim.action, linksLeft: linksLeft))
            }
            tellKernel(victim, names: names)
        }
        for index in refused where namesDone[index] == nil { outcome.skipped.insert(victims[index].file) }
        log.append(records)
        state.saveFlagsIfChanged()
        if freedFiles > 0 { countersChanged.store(true, ordering: .relaxed) }
        return outcome
    }

    private func saveCounters() {
        guard countersChanged.exchange(false, ordering: .relaxed) else { return }
        do { try stateDirectory.replace(PurgeCounters.fileName, with: state.purgeCounters.encoded) } catch {
            Diagnostics.note("cannot record the purge counters: \(error)")
        }
    }

    private func tellKernel(_ victim: PurgeVictim, names: [Done]) {
        let child = inodes.node(for: victim.file)
        if victim.action == .truncate {
            if let child { notifier.send(.dataChanged(child)) }
            return
        }
        for name in names {
            guard let parent = inodes.node(for: name.directory) else { continue }
            notifier.send(.deleted(parent: parent, child: child, name: name.name))
        }
    }
}
