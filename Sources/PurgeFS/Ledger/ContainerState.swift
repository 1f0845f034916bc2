import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// What purgefs knows about the container beyond the backing files: the
/// ledger (totals, purge order), where directories are, the device model
/// and the purge counters, all behind one lock.
///
/// Lock order: `NamespaceLocks` stripes, then the clone backend's lock
/// (`CloneBackend`, which holds this state to charge clones), then this lock. Nothing here does
/// I/O under the lock except `statvfs` of the backing filesystem.
final class ContainerState: Sendable {
    private let books: Mutex<Books>
    let stateDirectory: StateDirectory

    /// Everything behind the state's lock.
    struct Books {
        var ledger: Ledger
        var names: DirectoryNames
        var model: CapacityModel
        var monitor = PurgeMonitor()
        /// Bytes promised to writes in flight, not yet in the ledger.
        var reserved: UInt64 = 0
        /// The highest container usage the ledger has held since the mount (`user.purgefs.peak_used`).
        var peakUsage: UInt64 = 0
        var counters: PurgeCounters
        var flags: StoredFlags
        /// The flags changed since they were last saved.
        var flagsChanged = false
        var zones: ZoneSet

        /// Drops the stored flags of an entry that no longer exists, so a
        /// new file that gets its inode number does not inherit a pin.
        mutating func forgetFlagsIfGone(_ id: EntryID) {
            guard !ledger.contains(id), flags.flags(of: id) != [] else { return }
            flags.remove(id)
            flagsChanged = true
        }
    }

    /// The backing filesystem, for its real size and free space.
    let backing: FileDescriptor

    init(ledger: Ledger, names: DirectoryNames, model: CapacityModel, counters: PurgeCounters, flags: StoredFlags,
         zones: ZoneSet, backing: FileDescriptor, stateDirectory: StateDirectory) {
        self.stateDirectory = stateDirectory
        self.books = Mutex(Books(ledger: ledger, names: names, model: model, peakUsage: ledger.usage, counters: counters,
                                 flags: flags, zones: zones))
        self.backing = backing
    }

    /// Runs `body` holding the state's lock, with everything it guards.
    func withBooks<T, E: Error>(_ body: (inout Books) throws(E) -> T) throws(E) -> T {
        try books.withLock { (books: inout sending Books) throws(E) -> sending T in try body(&books) }
    }

    /// Runs `body` with exclusive access to the ledger and directory names.
    func withLedger<T, E: Error>(_ body: (inout Ledger, inout DirectoryNames) throws(E) -> T) throws(E) -> T {
        try withBooks { (books) throws(E) -> T in try body(&books.ledger, &books.names) }
    }

    /// Reads under the lock.
    func read<T>(_ body: (Ledger, DirectoryNames) -> T) -> T {
        withBooks { books in body(books.ledger, books.names) }
    }

    var purgeCounters: PurgeCounters { withBooks { $0.counters } }

    var peakUsed: UInt64 { withBooks { $0.peakUsage } }

    /// Writes the flags file if flags were dropped or set since the last save.
    func saveFlagsIfChanged() {
        let changed: StoredFlags? = withBooks { books in
            guard books.flagsChanged else { return nil }
            books.flagsChanged = false
            return books.flags
        }
        guard let changed else { return }
        do { try stateDirectory.replace(StoredFlags.fileName, with: changed.encoded) } catch {
            Diagnostics.note("cannot save the purgefs flags: \(error)")
        }
    }

    /// Records what the purger did to one victim, and counts it when it is
    /// gone completely, in one step: no reader sees the space freed but
    /// not yet counted.
    /// `freed`: the bytes the purge gave back (0 when a hard link elsewhere keeps the data), added to the totals.
    func recordPurge(_ victim: PurgeVictim, removedFrom directories: [EntryID], complete: Bool, freed: UInt64) {
        withBooks { books in
            do {
                if complete {
                    try books.ledger.purged(victim)
                } else {
                    for directory in directories { try books.ledger.removeLink(victim.file, parent: directory) }
                }
            } catch {
                Diagnostics.note("accounting drifted during a purge: \(error)")
            }
            if complete {
                books.counters.bytes += freed
                books.counters.files += 1
            }
            books.forgetFlagsIfGone(victim.file)
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
