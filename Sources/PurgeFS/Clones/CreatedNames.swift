import PurgeCore
import Synchronization

/// The name each file `create` made was made as, while the open that made
/// it lasts (until the first close of the node): where a linked clone into
/// it goes, without looking its name up (`makeClone`, as `cp` makes a
/// file and clones into it). The clone backend's own table, keyed by the
/// node's identity, so `OpenFile` carries nothing of clones' names. A leaf
/// lock: taken under a namespace lock (`created`), nothing under it.
final class CreatedNames: Sendable {
    private let names = Mutex<[EntryID: LinkedCloneRegistry.Name]>([:])

    /// `id` was made as `name` by an open that holds it.
    func note(_ id: EntryID, as name: LinkedCloneRegistry.Name) {
        names.withLock { $0[id] = name }
    }

    /// An open of `id` ended: the name it was made as is no longer known.
    func forget(_ id: EntryID) {
        names.withLock { _ = $0.removeValue(forKey: id) }
    }

    func name(of id: EntryID) -> LinkedCloneRegistry.Name? {
        names.withLock { $0[id] }
    }
}
