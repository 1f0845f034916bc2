import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// Where a clone registry lives in the state directory: a snapshot (`NAME`)
/// and the changes since (`NAME.journal`), each change appended and synced
/// before the step it records is taken, so a clone costs one short append,
/// not a rewrite of the whole registry.
///
/// Both files start with `epoch N`. Folding the journal into a new snapshot
/// writes the snapshot with the next epoch first, then starts a new journal:
/// a journal whose epoch is not the snapshot's is an old one (the daemon
/// stopped in between) and is not read.
///
/// `save(_:)` is called under its owner's lock (one writer at a time); its
/// own lock, a leaf below the owner's, makes that checked by the compiler.
/// `save(taking:)` is for owners that keep their lock off the I/O: the
/// store's lock is then taken first and the owner's briefly under it.
final class RegistryStore<Registry: JournaledRecords>: Sendable {
    let snapshotName: String
    var journalName: String { snapshotName + ".journal" }
    /// The journal is folded when it outgrows the snapshot (and this).
    static var foldAt: Int { 1 << 16 }

    private let directory: StateDirectory
    private let files = Mutex<Files>(Files())

    private struct Files {
        var epoch: UInt64 = 0
        var journal: FileDescriptor?
        var journalBytes = 0
        var snapshotBytes = 0
    }

    init(directory: StateDirectory, named name: String) {
        self.directory = directory
        self.snapshotName = name
    }

    /// Something was stored (a snapshot).
    var hasStored: Bool { files.withLock { $0.snapshotBytes > 0 } }

    /// The stored registry; empty (with a line in the log) when malformed.
    func load() -> Registry {
        guard let bytes = storedLines() else { return Registry() }
        guard let registry = Registry(decoding: bytes) else {
            Diagnostics.note("state file \(snapshotName) is malformed; the clone relationships in it are forgotten")
            return Registry()
        }
        return registry
    }

    /// The snapshot's lines followed by the current journal's, without
    /// their epoch lines (nil: nothing stored), for an owner that decodes
    /// them itself (and refuses rather than forgets what it cannot read).
    func storedLines() -> [UInt8]? {
        guard let snapshot = try? directory.read(snapshotName) else { return nil }
        let (snapshotEpoch, snapshotBody) = Self.splitEpoch(snapshot)
        var bytes = snapshotBody
        var journalBytes = 0
        if let journal = try? directory.read(journalName) {
            let (journalEpoch, journalBody) = Self.splitEpoch(journal)
            if journalEpoch == snapshotEpoch {
                bytes += journalBody
                journalBytes = journal.count
            }
        }
        files.withLock { [journalBytes] files in
            files.epoch = snapshotEpoch
            files.snapshotBytes = snapshot.count
            files.journalBytes = journalBytes
        }
        return bytes
    }

    /// Appends the registry's changes, synced; folds the journal when long.
    func save(_ registry: inout Registry) throws(Errno) {
        let changes = registry.takeChanges()
        guard !changes.isEmpty else { return }
        try files.withLock { (files) throws(Errno) in
            if files.journalBytes + changes.count > max(Self.foldAt, files.snapshotBytes) {
                return try fold(registry, in: &files)
            }
            let file = try openJournal(&files)
            _ = try changes.withUnsafeBytes { buffer in
                Result { () throws(Errno) in try file.writeAll(buffer) }
            }.get()
            try file.sync(dataOnly: true)
            files.journalBytes += changes.count
        }
    }

    /// `save` for an owner that does not hold its lock across the I/O:
    /// `take` is called under this store's lock and returns the changes to
    /// append (taken from the registry under the owner's lock) and, should
    /// the journal be folded, the registry as it is then; so changes are
    /// appended in the order they were taken, and a fold never misses one.
    func save(taking take: () -> (changes: [UInt8], registry: Registry)) throws(Errno) {
        try save(taking: { () -> (changes: [UInt8], registry: Registry, fold: Bool) in
            let (changes, registry) = take()
            return (changes, registry, false)
        })
    }

    /// `save(taking:)` whose `take` may ask for a new snapshot instead of an
    /// append (`fold`: the journal may end in a torn line, after which an
    /// append would not be read back), decided under this store's lock.
    func save(taking take: () -> (changes: [UInt8], registry: Registry, fold: Bool)) throws(Errno) {
        try files.withLock { (files) throws(Errno) in
            let (changes, registry, mustFold) = take()
            guard !changes.isEmpty else { return }
            if mustFold || files.journalBytes + changes.count > max(Self.foldAt, files.snapshotBytes) {
                return try fold(registry, in: &files)
            }
            let file = try openJournal(&files)
            _ = try changes.withUnsafeBytes { buffer in
                Result { () throws(Errno) in try file.writeAll(buffer) }
            }.get()
            try file.sync(dataOnly: true)
            files.journalBytes += changes.count
        }
    }

    /// Writes the whole registry as a new snapshot (next epoch) and starts an empty journal.
    func fold(_ registry: Registry) throws(Errno) {
        try files.withLock { (files) throws(Errno) in try fold(registry, in: &files) }
    }

    private func fold(_ registry: Registry, in files: inout Files) throws(Errno) {
        let snapshot = Array("epoch \(files.epoch + 1)\n".utf8) + registry.encoded
        try directory.replace(snapshotName, with: snapshot)
        files.epoch += 1
        files.snapshotBytes = snapshot.count
        files.journal?.closeQuietly()
        files.journal = nil
        try directory.replace(journalName, with: Array("epoch \(files.epoch)\n".utf8))
        files.journalBytes = 0
    }

    private func openJournal(_ files: inout Files) throws(Errno) -> FileDescriptor {
        if let journal = files.journal { return journal }
        if files.journalBytes == 0 && files.snapshotBytes == 0 {
            // Nothing stored yet: a snapshot of epoch 0 for the journal to follow.
            try directory.replace(snapshotName, with: Array("epoch 0\n".utf8))
            files.snapshotBytes = 8
        }
        if files.journalBytes == 0 { try directory.replace(journalName, with: Array("epoch \(files.epoch)\n".utf8)) }
        let file = try directory.openForAppending(journalName)
        files.journal = file
        return file
    }

    /// The `epoch N` first line (0 when there is none: an older file) and the rest.
    private static func splitEpoch(_ bytes: [UInt8]) -> (UInt64, [UInt8]) {
        guard bytes.starts(with: Array("epoch ".utf8)), let end = bytes.firstIndex(of: UInt8(ascii: "\n")),
              let epoch = UInt64(String(decoding: bytes[6..<end], as: UTF8.self))
        else { return (0, bytes) }
        return (epoch, Array(bytes[(end + 1)...]))
    }
}
