import Glibc
import PurgeCore
import PurgeSys

/// The ledger and recency as an observer of the passthrough (the first one
/// registered): each event becomes the `note*` calls of
/// `ContainerState+Tracking`. `resized` is not heard here: the clone backend
/// records a file's new figures (`noteResized`), or its group's charges. Reconciling a change made behind the mount
/// calls those directly: it repairs the ledger, and the other observers are
/// not told (DESIGN "Changes behind the mount").
extension ContainerState: FileSystemObserver {
    func created(_ status: stat, id: EntryID, name: CName, in parent: EntryID, opened: Bool) {
        noteCreated(status, id: id, name: name, in: parent)
        if opened { noteOpened(id) }
    }

    func opened(_ id: EntryID) { noteOpened(id) }

    func openAbandoned(_ id: EntryID) { noteClosed(id) }

    func used(_ id: EntryID) { noteUsed(id) }

    func closed(_ id: EntryID) { noteClosed(id) }

    func removed(_ status: stat, id: EntryID, name: CName, from parent: EntryID) {
        noteRemoved(status, id: id, from: parent)
    }

    func moved(_ status: stat, id: EntryID, name: CName, from parent: EntryID, newName: CName, to newParent: EntryID) {
        noteMoved(status, id: id, from: parent, to: newParent, newName: newName)
    }

    /// The replaced side first, then the moving one.
    func exchanged(_ exchange: Exchange) {
        noteMoved(exchange.replaced, id: exchange.replacedID, from: exchange.newParent, to: exchange.parent, newName: exchange.name)
        noteMoved(exchange.moving, id: exchange.movingID, from: exchange.parent, to: exchange.newParent, newName: exchange.newName)
    }
}
