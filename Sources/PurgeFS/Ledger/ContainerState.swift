import Glibc
import PurgeCore
import PurgeSys

/// What purgefs knows about the container beyond the backing files: the
/// ledger (totals, purge order), where directories are, the device model
/// and the purge counters, all behind one lock.
///
/// Lock order: `NamespaceLocks` stripes, then this lock. Nothing here does
/// I/O under the lock except `statvfs` of the backing filesystem.
final class ContainerState: @unchecked Sendable {
    let lock = ThreadLock()
    // Guarded by `lock`.
    var ledger: Ledger
    var names: DirectoryNames
    var model: CapacityModel
    var monitor = PurgeMonitor()
    /// Bytes promised to writes in flight, not yet in the ledger.
    var reserved: UInt64 = 0
    /// The highest container usage the ledger has held since the mount (`user.purgefs.peak_used`).
    var peakUsage: UInt64
    var counters: PurgeCounters
    var flags: StoredFlags
    /// The flags changed since they were last saved.
    var flagsChanged = false
    var zones: ZoneSet
    let stateDirectory: StateDirectory
    /// Clone groups and their charges (its own lock, taken before this one).
    let clones: CloneBook
    /// Clones on a backing filesystem without reflinks (its own lock, taken before this one).
    let linked: LinkedClones

    /// The backing filesystem, for its real size and free space.
    let backing: FileDescriptor

    init(ledger: Ledger, names: DirectoryNames, model: CapacityModel, counters: PurgeCounters, flags: StoredFlags,
         zones: ZoneSet, backing: FileDescriptor, stateDirectory: StateDirectory,
         linkedClones: (RegistryStore<LinkedCloneRegistry>, LinkedCloneRegistry)? = nil) {
        self.stateDirectory = stateDirectory
        self.ledger = ledger
        self.peakUsage = ledger.usage
        self.names = names
        self.model = model
        self.counters = counters
        self.flags = flags
        self.zones = zones
        self.backing = backing
        self.clones = CloneBook(directory: stateDirectory, root: backing)
        let (store, registry) = linkedClones ?? (RegistryStore<LinkedCloneRegistry>(directory: stateDirectory, named: LinkedCloneRegistry.fileName), LinkedCloneRegistry())
        self.linked = LinkedClones(store: store, registry: registry, directory: stateDirectory, root: backing, reflinks: clones.reflinks)
    }

    /// Runs `body` with exclusive access to the ledger and directory names.
    func withLedger<T, E: Error>(_ body: (inout Ledger, inout DirectoryNames) throws(E) -> T) throws(E) -> T {
        try lock.withLock { () throws(E) -> T in try body(&ledger, &names) }
    }

    /// Reads under the lock.
    func read<T>(_ body: (Ledger, DirectoryNames) -> T) -> T {
        lock.withLock { body(ledger, names) }
    }

    var purgeCounters: PurgeCounters { lock.withLock { counters } }

    var peakUsed: UInt64 { lock.withLock { peakUsage } }

    /// Under the lock: drops the stored flags of an entry that no longer
    /// exists, so a new file that gets its inode number does not inherit a
    /// pin. `ledger` is passed in: callers hold it borrowed.
    func forgetFlagsIfGone(_ id: EntryID, in ledger: Ledger) {
        guard !ledger.contains(id), flags.flags(of: id) != [] else { return }
        flags.remove(id)
        flagsChanged = true
    }

    /// Writes the flags file if flags were dropped or set since the last save.
    func saveFlagsIfChanged() {
        let changed: StoredFlags? = lock.withLock {
            guard flagsChanged else { return nil }
            flagsChanged = false
            return flags
        }
        guard let changed else { return }
        do { try stateDirectory.replace(StoredFlags.fileName, with: changed.encoded) } catch {
            Diagnostics.note("cannot save the purgefs flags: \(error)")
        }
    }

    /// Records what the purger did to one victim, and counts it when it is
    /// gone completely, in one step: no reader sees the space freed but
    /// not yet counted.
    func recordPurge(_ victim: PurgeVictim, removedFrom directories: [EntryID], complete: Bool) {
        lock.withLock {
            do {
                if complete {
                    try ledger.purged(victim)
                } else {
                    for directory in directories { try ledger.removeLink(victim.file, parent: directory) }
                }
            } catch {
                Diagnostics.note("accounting drifted during a purge: \(error)")
            }
            if complete {
                counters.bytes += victim.bytes
                counters.files += 1
            }
            forgetFlagsIfGone(victim.file, in: ledger)
        }
    }
}

/// Totals purged since the container was first mounted, kept in the state directory.
struct PurgeCounters: Equatable, Sendable {
    var bytes: UInt64 = 0
    var files: UInt64 = 0

    static let fileName = "purged"

    /// `bytes N\nfiles N\n`
    var encoded: [UInt8] { Array("bytes \(bytes)\nfiles \(files)\n".utf8) }

    init() {}

    init?(decoding data: [UInt8]) {
        var values: [String: UInt64] = [:]
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 2, let value = UInt64(parts[1]) else { return nil }
            values[String(parts[0])] = value
        }
        guard let bytes = values["bytes"], let files = values["files"] else { return nil }
        self.bytes = bytes
        self.files = files
    }
}

extension EntryID {
    /// The identity of the backing file `status` describes.
    init(_ status: stat) {
        self.init(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
    }
}
