import Glibc
import PurgeCore
import PurgeSys

/// The cloud tier as an observer of the passthrough (registered after the
/// ledger, whose directory names it reads to make paths). `beginOpen` and
/// `endOpen` are its own (`CloudTier+Files`): an evicted file is downloaded
/// before it is opened or its size or times set.
extension CloudTier: FileSystemObserver {
    func created(_ status: stat, id: EntryID, name: CName, in parent: EntryID, opened: Bool) {
        noteCreated(status, name: name, in: parent)
    }

    /// A file closed: its upload is scheduled after the debounce.
    func closed(_ id: EntryID) { noteClosed(id) }

    /// Scheduled like a close.
    func changed(_ id: EntryID) { noteClosed(id) }

    func removed(_ status: stat, id: EntryID, name: CName, from parent: EntryID) {
        noteRemoved(status, name: name, from: parent)
    }

    func moved(_ status: stat, id: EntryID, name: CName, from parent: EntryID, newName: CName, to newParent: EntryID) {
        noteMoved(status, name: name, from: parent, newName: newName, in: newParent)
    }

    /// Only the moving side is followed, as before the observers (the
    /// replaced side's records are not swapped: a known gap), and nothing
    /// when both names are of one backing file.
    func exchanged(_ exchange: Exchange) {
        guard !exchange.oneBackingFile else { return }
        noteMoved(exchange.moving, name: exchange.name, from: exchange.parent, newName: exchange.newName, in: exchange.newParent)
    }

    /// With `optimize_storage`, evicts uploaded documents.
    func needsRoom(_ bytes: UInt64, reason: String) -> UInt64 {
        evictForSpace(bytes, reason: reason)
    }
}
