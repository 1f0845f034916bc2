import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// Keeps the purge order across mounts: a snapshot of every file's stamp
/// (`recency`), and a journal of the stamps changed since (`recency.journal`),
/// appended every few seconds. Appending only what changed keeps frequent
/// saves cheap on a large container; the journal is folded into a new
/// snapshot when it grows, at mount and at unmount.
final class RecencyStore: Sendable {
    static let fileName = "recency"
    static let journalName = "recency.journal"
    /// Records in the journal before it is folded into the snapshot.
    static let journalLimit = 100_000

    private let directory: StateDirectory
    private let journal = Mutex<Int>(0)  // records appended since the last snapshot
    /// `load` found no journal to lay over the snapshot.
    private let loadedWithoutJournal = Mutex(false)

    init(directory: StateDirectory) {
        self.directory = directory
    }

    /// The snapshot of earlier mounts with their journal laid over it; nil if
    /// there is none (an unreadable snapshot is set aside, said in the log).
    func load() -> RecencySnapshot? {
        var snapshot: RecencySnapshot?
        do {
            if let bytes = try directory.read(Self.fileName) { snapshot = try RecencySnapshot(decoding: bytes) }
        } catch {
            Diagnostics.note("the saved purge order is unreadable and was set aside: \(error)")
        }
        let journalBytes = (try? directory.read(Self.journalName)) ?? nil
        let blocks = RecencySnapshot.decodingJournal(journalBytes ?? [])
        loadedWithoutJournal.withLock { $0 = blocks.isEmpty }
        for block in blocks {
            snapshot = snapshot.map { $0.merging(block) } ?? block
        }
        return snapshot
    }

    /// Appends the stamps changed since the last save to the journal, or
    /// folds everything into a new snapshot when the journal is long.
    func save(_ state: ContainerState) {
        let changes = state.withLedger { ledger, _ in ledger.takeRecencyChanges() }
        guard !changes.records.isEmpty else { return }
        let total = journal.withLock { $0 } + changes.records.count
        guard total <= Self.journalLimit else { return compact(state) }
        do {
            let file = try directory.openForAppending(Self.journalName)
            defer { file.closeQuietly() }
            let bytes = changes.encoded()
            try bytes.withUnsafeBytes { buffer in
                Result { () throws(Errno) in try file.writeAll(buffer) }
            }.get()
            try file.sync(dataOnly: true)
            journal.withLock { $0 = total }
        } catch {
            Diagnostics.note("cannot save the purge order: \(error)")
        }
    }

    /// At mount: folds the journal into a new snapshot, unless the stored
    /// snapshot (with no journal) already stamps exactly the files found,
    /// which a clean unmount leaves: rewriting it would change nothing.
    func compactAtMount(_ state: ContainerState, snapshotIsCurrent: Bool) {
        if snapshotIsCurrent && loadedWithoutJournal.withLock({ $0 }) {
            state.withLedger { ledger, _ in _ = ledger.takeRecencyChanges() }
            return
        }
        compact(state)
    }

    /// Writes every file's stamp as the new snapshot and empties the journal.
    func compact(_ state: ContainerState) {
        let snapshot = state.withLedger { ledger, _ -> RecencySnapshot in
            _ = ledger.takeRecencyChanges()
            return ledger.recencySnapshot()
        }
        do {
            try directory.replace(Self.fileName, with: snapshot.encoded())
            try directory.descriptor.unlink(Self.journalName)
        } catch where error == .noEntry {
            // No journal yet.
        } catch {
            Diagnostics.note("cannot save the purge order: \(error)")
            return
        }
        journal.withLock { $0 = 0 }
    }
}
