import Glibc
import PurgeCore
import PurgeSys

/// The ledger and recency as an observer of the passthrough (the first one
/// registered): each event becomes the `note*` calls of
/// `ContainerState+Tracking`. `resized` is not heard here: the clone backend
/// records a file's new figures (`noteResized`), or its group's charges.
/// Changes found behind the mount (`foundBehindMount`) are the same `note*`
/// calls: the ledger follows the backing store, whoever changed it.
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

    /// The ledger's repair: what a handler would have noted.
    func foundBehindMount(_ change: FoundChange) {
        switch change {
        case .created(let status, let id, let name, let parent):
            noteCreated(status, id: id, name: name, in: parent)
        case .removed(let status, let id, let parent):
            noteRemoved(status, id: id, from: parent)
        case .moved(let status, let id, let parent, let newName, let newParent):
            noteMoved(status, id: id, from: parent, to: newParent, newName: newName)
        }
    }
}
