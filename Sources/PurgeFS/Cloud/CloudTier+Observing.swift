import Glibc
import PurgeCore
import PurgeSys

/// The cloud tier as an observer of the passthrough (registered after the
/// ledger, whose directory names it reads to make paths). `created`,
/// `closed`, `removed` and `moved` are its own (`CloudTier+Files`), and so
/// are `beginOpen` and `endOpen`: an evicted file is downloaded before it is
/// opened or its size or times set.
extension CloudTier: FileSystemObserver {
    /// Scheduled like a close: the upload goes after the debounce.
    func changed(_ id: EntryID) { closed(id) }

    /// Only the moving side is followed, as before the observers (the
    /// replaced side's records are not swapped: a known gap), and nothing
    /// when both names are of one backing file.
    func exchanged(_ exchange: Exchange) {
        guard !exchange.oneBackingFile else { return }
        moved(exchange.moving, id: exchange.movingID, name: exchange.name, from: exchange.parent,
              newName: exchange.newName, to: exchange.newParent)
    }

    /// With `optimize_storage`, evicts uploaded documents.
    func needsRoom(_ bytes: UInt64, reason: String) -> UInt64 {
        evictForSpace(bytes, reason: reason)
    }
}
