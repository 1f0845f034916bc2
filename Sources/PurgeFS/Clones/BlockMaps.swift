import CLinux
import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// The mount's block maps (`BlockMapBook`) and where they are kept: the
/// state directory's `block-maps` snapshot and `block-maps.journal`
/// (`RegistryStore`). docs/DESIGN.md, "Block sharing without reflinks".
///
/// Records wait in the book as pending until their member is committed
/// (`commit`, after its anchor's data is synced); the store's lock is taken
/// first and the book's briefly under it, so records reach the journal in
/// the order they were taken. The book's lock guards memory only.
final class BlockMaps: Sendable {
    let store: RegistryStore<BlockMapBook>
    private let state: Mutex<State>

    private struct State {
        var book: BlockMapBook
        /// An append failed: the journal may end in a torn line, so the
        /// next commit writes a whole snapshot instead of appending.
        var mustFold = false
    }

    /// Reads the stored maps; a line that does not parse is refused (the
    /// members would otherwise read holes where they share). The first
    /// commit writes a new snapshot rather than appending, so a torn last
    /// line of the stored journal never has a record appended after it.
    init(directory: StateDirectory) throws(BlockMapRecord.Malformed) {
        store = RegistryStore(directory: directory, named: BlockMapBook.fileName)
        let book = try store.storedLines().map { (lines) throws(BlockMapRecord.Malformed) in try BlockMapBook.decode(lines) }
            ?? BlockMapBook()
        state = Mutex(State(book: book, mustFold: store.hasStored))
    }

    var book: BlockMapBook { state.withLock { $0.book } }
    func current(_ member: EntryID) -> BlockMapBook.Entry? { state.withLock { $0.book.current(member) } }

    /// Queues `record` as pending.
    func record(_ record: BlockMapRecord) {
        state.withLock { $0.book.record(record) }
    }

    /// `BlockMapBook.recordDrop`: whether a `drop` of `member` is pending.
    func dropRecorded(_ member: EntryID) -> Bool {
        state.withLock { $0.book.recordDrop(of: member) }
    }

    /// Makes `member`'s pending records durable (all members' with nil).
    /// Only after the member's anchor data is synced. After a failed append
    /// (or at the first commit after reading a stored journal, which may end
    /// torn) the whole durable book is written as a new snapshot instead.
    func commit(_ member: EntryID?) throws(Errno) {
        do throws(Errno) {
            try store.save(taking: { () -> (changes: [UInt8], registry: BlockMapBook, fold: Bool) in
                state.withLock { state in
                    let changes = member.map { state.book.takeChanges(of: $0) } ?? state.book.takeChanges()
                    let fold = state.mustFold && !changes.isEmpty
                    if fold { state.mustFold = false }
                    return (changes, state.book, fold)
                }
            })
        } catch {
            state.withLock { $0.mustFold = true }
            throw error
        }
    }

    /// What a kill does to the book (tests): pending records are lost.
    func forgetPending() {
        state.withLock { $0.book.forgetPending() }
    }

    /// Applies replay's repairs in their order: the records made durable
    /// (journal synced), emptied anchors truncated, shared blocks holding
    /// data punched (`anchor(member)` opens a member's anchor for writing),
    /// then `unlinkBase` for every base nobody names.
    func repair(
        _ repairs: BlockShareCheck.Repairs, anchor: (EntryID) throws(Errno) -> FileDescriptor,
        unlinkBase: (EntryID) throws(Errno) -> Void
    ) throws(Errno) {
        if !repairs.records.isEmpty {
            var book = self.book
            do {
                try book.applyDurable(repairs.records)
            } catch {
                preconditionFailure("replay's repairs do not apply: \(error)")
            }
            try store.fold(book)
            state.withLock { $0.book = book }
        }
        for member in repairs.emptied {
            let file = try anchor(member)
            defer { file.closeQuietly() }
            try file.truncate(to: 0)
        }
        for (member, blocks) in repairs.punches.sorted(by: { $0.key < $1.key }) {
            let file = try anchor(member)
            defer { file.closeQuietly() }
            for range in blocks {
                try file.punchHole(
                    offset: Int64(range.lowerBound * BlockMap.blockSize), length: Int64(UInt64(range.count) * BlockMap.blockSize))
            }
            try file.sync(dataOnly: true)
        }
        for base in repairs.unlinkBases { try unlinkBase(base) }
    }
}

extension BlockShareCheck.Anchor {
    /// The anchor's size and data ranges, from `SEEK_DATA`/`SEEK_HOLE`.
    init(reading file: FileDescriptor) throws(Errno) {
        let size = UInt64(try file.status().st_size)
        var data: [Range<UInt64>] = []
        var offset: Int64 = 0
        while UInt64(offset) < size {
            let start: Int64
            do throws(Errno) {
                start = try file.seek(to: offset, whence: clinux_SEEK_DATA)
            } catch where error == Errno(ENXIO) {
                break
            }
            let end = try file.seek(to: start, whence: clinux_SEEK_HOLE)
            data.append(UInt64(start)..<UInt64(end))
            offset = end
        }
        self.init(size: size, data: data)
    }
}
