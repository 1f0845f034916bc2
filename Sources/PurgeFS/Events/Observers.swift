import Glibc
import PurgeCore
import PurgeSys

/// The observers registered at mount (`MountAssembly`), and the
/// one call per event that the handlers make. Each event goes to every
/// observer in registration order: the ledger first (so a feature that
/// reads the ledger sees the change), then the clone backend, then the
/// cloud tier, then any other.
/// `endOpen` goes in the reverse order, so brackets nest.
///
/// Each is called where the array stores it (`all[index]`), not copied out
/// of it first: a copy of an existential is a retain and a destroy, and a
/// write announces five events to each observer.
struct Observers: Sendable {
    let all: [any FileSystemObserver]

    init(_ all: [any FileSystemObserver]) {
        self.all = all
    }

    /// Every observer's `beginOpen`; if one refuses, those that had begun
    /// are ended (in reverse) and its error is thrown.
    func beginOpen(_ inode: Inode) throws(Errno) {
        for (index, observer) in all.enumerated() {
            do throws(Errno) { try observer.beginOpen(inode) } catch {
                for begun in all[..<index].reversed() { begun.endOpen(inode) }
                throw error
            }
        }
    }

    func endOpen(_ inode: Inode) {
        for observer in all.reversed() { observer.endOpen(inode) }
    }

    func created(_ status: stat, id: EntryID, name: CName, in parent: EntryID, opened: Bool = false) {
        for index in all.indices { all[index].created(status, id: id, name: name, in: parent, opened: opened) }
    }

    func opened(_ id: EntryID) {
        for index in all.indices { all[index].opened(id) }
    }

    func openAbandoned(_ id: EntryID) {
        for index in all.indices { all[index].openAbandoned(id) }
    }

    func used(_ id: EntryID) {
        for index in all.indices { all[index].used(id) }
    }

    func resized(_ status: stat, id: EntryID) {
        for index in all.indices { all[index].resized(status, id: id) }
    }

    func closed(_ id: EntryID) {
        for index in all.indices { all[index].closed(id) }
    }

    func changed(_ id: EntryID) {
        for index in all.indices { all[index].changed(id) }
    }

    func removed(_ status: stat, id: EntryID, name: CName, from parent: EntryID) {
        for index in all.indices { all[index].removed(status, id: id, name: name, from: parent) }
    }

    func moved(_ status: stat, id: EntryID, name: CName, from parent: EntryID, newName: CName, to newParent: EntryID) {
        for index in all.indices { all[index].moved(status, id: id, name: name, from: parent, newName: newName, to: newParent) }
    }

    /// Each observer hears the whole rename before the next one does (its
    /// `removed` then its `moved`, unless it handles the pair itself).
    func renamedOver(_ status: stat, id: EntryID, name: CName, from parent: EntryID, newName: CName, to newParent: EntryID,
                     replacing replaced: stat, replacedID: EntryID) {
        for observer in all {
            observer.renamedOver(status, id: id, name: name, from: parent, newName: newName, to: newParent,
                                 replacing: replaced, replacedID: replacedID)
        }
    }

    func exchanged(_ exchange: Exchange) {
        for index in all.indices { all[index].exchanged(exchange) }
    }

    /// Every observer's `beforeModify`, in order; the first refusal is thrown.
    func beforeModify(_ inode: Inode, _ change: Modification, breaking: CloneBreaking) throws(Errno) {
        for index in all.indices { try all[index].beforeModify(inode, change, breaking: breaking) }
    }

    func willChangeData(_ inode: Inode, _ change: DataChange) {
        for index in all.indices { all[index].willChangeData(inode, change) }
    }

    func changedData(_ inode: Inode, _ change: DataChange) {
        for index in all.indices { all[index].changedData(inode, change) }
    }

    func synced(_ inode: Inode) {
        for index in all.indices { all[index].synced(inode) }
    }

    func directorySynced(_ directory: EntryID) {
        for index in all.indices { all[index].directorySynced(directory) }
    }

    func beforeRemove(_ status: stat, name: CName, in descriptor: FileDescriptor, parent directory: EntryID) {
        for index in all.indices { all[index].beforeRemove(status, name: name, in: descriptor, parent: directory) }
    }

    func removeAbandoned(_ status: stat, name: CName, parent directory: EntryID) {
        for index in all.indices { all[index].removeAbandoned(status, name: name, parent: directory) }
    }

    func beforeMove(_ status: stat, id: EntryID, name: CName, from parent: EntryID, newName: CName, to newParent: EntryID) {
        for index in all.indices { all[index].beforeMove(status, id: id, name: name, from: parent, newName: newName, to: newParent) }
    }

    func moveAbandoned(_ status: stat, id: EntryID, name: CName, from parent: EntryID) {
        for index in all.indices { all[index].moveAbandoned(status, id: id, name: name, from: parent) }
    }

    func foundBehindMount(_ change: FoundChange) {
        for index in all.indices { all[index].foundBehindMount(change) }
    }

    /// Asks each observer in turn for what is still missing, until `bytes`
    /// are freed; returns what was freed.
    func needsRoom(_ bytes: UInt64, reason: String) -> UInt64 {
        var freed: UInt64 = 0
        for observer in all where freed < bytes {
            freed += observer.needsRoom(bytes - freed, reason: reason)
        }
        return freed
    }
}
