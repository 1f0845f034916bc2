import Glibc
import PurgeCore
import PurgeSys

/// A feature that follows what the passthrough does: the ledger and recency
/// (`ContainerState`), the clone backend (`CloneBackend`), the cloud tier
/// (`CloudTier`), and whatever comes next
/// (fault injection, shared devices). The handlers do the syscall and the
/// reply, then announce what they did through `Observers`, registered at
/// mount; a feature is added by writing an observer, not by editing every
/// handler. docs/DESIGN.md lists the events, who listens, in what order and
/// under which locks each is announced.
///
/// Every event has a default that does nothing: an observer implements what
/// it needs. An observer is called on the handler's thread, maybe under the
/// locks its event names: it takes only leaf locks of its own and
/// `ContainerState`'s lock, never a namespace lock, and never waits for the
/// kernel or for another request (DESIGN "Who may wait for whom").
///
/// Identities: `id` is the identity the inode was handed out with (a linked
/// clone's own, `ContainerState.identity(of:name:in:)`); `status` is the
/// backing file's, so `EntryID(status)` is the backing identity.
protocol FileSystemObserver: Sendable {
    /// `inode` is about to be opened, or its size or times set: its data
    /// must be there first (the cloud tier downloads an evicted file). May
    /// refuse the operation. Each `beginOpen` that returned is followed by
    /// one `endOpen`, whether the operation succeeded or not.
    func beginOpen(_ inode: Inode) throws(Errno)
    func endOpen(_ inode: Inode)

    /// `name` in `parent` was made (create, mknod, mkdir, symlink, link).
    /// `opened`: by `create`, which holds it open from this moment: counted
    /// open before the directory's lock goes, so the purger never sees it
    /// unopened.
    func created(_ status: stat, id: EntryID, name: CName, in parent: EntryID, opened: Bool)
    /// An existing file was opened.
    func opened(_ id: EntryID)
    /// An open counted by `created(opened: true)` never reached the caller
    /// (the handler failed after creating): it is closed, nothing else happened.
    func openAbandoned(_ id: EntryID)
    /// Data was read or written (recency).
    func used(_ id: EntryID)
    /// The backing file's size or allocation may have changed; `status` is
    /// as it is now.
    func resized(_ status: stat, id: EntryID)
    /// An open file was released.
    func closed(_ id: EntryID)
    /// The file's data, size, times or names changed without an open file
    /// (a `setattr` of size or times, a new hard link).
    func changed(_ id: EntryID)
    /// `name` in `parent` is gone (unlink, rmdir, or replaced by a rename).
    func removed(_ status: stat, id: EntryID, name: CName, from parent: EntryID)
    /// `name` in `parent` became `newName` in `newParent`.
    func moved(_ status: stat, id: EntryID, name: CName, from parent: EntryID, newName: CName, to newParent: EntryID)
    /// A rename over an existing name: what `newName` in `newParent` named
    /// (`replaced`, `replacedID`) is gone, and `name` in `parent` took its
    /// place. One event, because rename(2) is one step: an observer that
    /// keeps an order others can cut (the operation log, the crash journal)
    /// keeps the two halves together. The default is this observer's
    /// `removed` of the replaced entry, then its `moved`.
    func renamedOver(_ status: stat, id: EntryID, name: CName, from parent: EntryID, newName: CName, to newParent: EntryID,
                     replacing replaced: stat, replacedID: EntryID)
    /// `RENAME_EXCHANGE`: `name` in `parent` (now `newName` in `newParent`)
    /// and `newName` in `newParent` (now `name` in `parent`) swapped.
    /// `oneBackingFile`: both names are of one backing file (a linked clone
    /// and what it shares): rename(2) changed nothing there, only which
    /// identity each name stands for.
    func exchanged(_ exchange: Exchange)
    /// `inode`'s data is about to change (`change` says how), before the
    /// change and before the modification bracket that keeps clones from
    /// being made of it meanwhile; may refuse the change. Announced again
    /// when the bracket could not be had (a clone was made in between), so
    /// it may come more than once for one change. A linked clone gets data
    /// of its own here. `breaking` is what a clone break needs of the mount
    /// (room for the copy, the namespace locks, the root, the inode table,
    /// the events), never the filesystem itself.
    func beforeModify(_ inode: Inode, _ change: Modification, breaking: CloneBreaking) throws(Errno)
    /// Room is needed (`reason`: "write" or "monitor") and purging freed
    /// none: frees up to `bytes` if it can (the cloud tier evicts uploaded
    /// documents), returning what it freed.
    func needsRoom(_ bytes: UInt64, reason: String) -> UInt64

    /// The regular file's data or size is about to change where `change`
    /// says, inside the inode's modification bracket (after `beforeModify`:
    /// a linked clone has data of its own by then): the crash simulation
    /// saves what the change overwrites. Once per change.
    func willChangeData(_ inode: Inode, _ change: DataChange)
    /// The change `willChangeData` announced was made (it succeeded), still
    /// inside the modification bracket: the operation log (`record=`) reads
    /// what the file holds now. A whole-file clone into an empty file is
    /// announced as an overwrite of all of it.
    func changedData(_ inode: Inode, _ change: DataChange)
    /// `fsync`, `fdatasync` or an `O_SYNC`/`O_DSYNC` write succeeded: the
    /// file's data is durable.
    func synced(_ inode: Inode)
    /// `fsyncdir` of the directory succeeded: its names are durable.
    func directorySynced(_ directory: EntryID)
    /// `name` in `directory` (open at `descriptor`) is about to be removed
    /// (unlink, rmdir, replaced by a rename); `status` is what it names.
    func beforeRemove(_ status: stat, name: CName, in descriptor: FileDescriptor, parent directory: EntryID)
    /// The removal `beforeRemove` announced failed: `name` is still there.
    func removeAbandoned(_ status: stat, name: CName, parent directory: EntryID)
    /// `name` in `parent` (`status`, identity `id`) is about to be renamed
    /// to `newName` in `newParent` (over an existing name or not, or
    /// exchanged with it), before the syscall: an observer whose record of
    /// the name must survive `kill -9` between the syscall and `moved` (a
    /// linked clone's) records the move as under way first. Not announced
    /// when both names are of one backing file (rename(2) changes nothing).
    func beforeMove(_ status: stat, id: EntryID, name: CName, from parent: EntryID, newName: CName, to newParent: EntryID)
    /// The rename `beforeMove` announced failed: `name` in `parent` is still `id`'s.
    func moveAbandoned(_ status: stat, id: EntryID, name: CName, from parent: EntryID)

    /// Reconciling a directory (`ContainerFileSystem.reconcile`, for the
    /// live tracker, the periodic verification and the power-loss
    /// simulation's repair) found a change the mount did not make: behind
    /// the mount, in the backing directory, by a process that did not go
    /// through the mount (or a name `crash()` undid). Not `created`,
    /// `removed` or `moved`, which say what the mount did: an observer that
    /// acts on those acts for the mount's user (the cloud tier deletes the
    /// remote copy of a removed document), and a change found afterwards
    /// lacks what they carry (the name a removed file had, where a directory
    /// moved in came from). An observer that must follow the backing store
    /// whatever changed it (the ledger) hears this too. Announced under the
    /// directory's namespace lock. A size changed behind the mount is the
    /// ordinary `resized`.
    func foundBehindMount(_ change: FoundChange)
}

/// A change the mount did not make, as reconciling a directory found it
/// (`foundBehindMount`). A file moved between two directories is found as a
/// name `created` in one and `removed` from the other (its record, recency
/// and pins stay: the name comes first); only a directory is found `moved`.
enum FoundChange {
    /// `name` in directory `in` is new to the ledger: a file (a new file, or one
    /// more name of a file it has) or a directory. A new directory's entries
    /// follow, each announced on its own, every directory before what it holds.
    case created(stat, id: EntryID, name: CName, in: EntryID)
    /// A name of `id` in directory `from` is gone. `status` carries only the type
    /// and the identity: the entry is no longer there to be stat'ed, and
    /// its name is not known. A directory comes after everything the ledger
    /// had below it, each its own `removed`.
    case removed(stat, id: EntryID, from: EntryID)
    /// Directory `id`, recorded in `from`, is now `newName` in `to`
    /// (renamed in place, or moved in from another directory).
    case moved(stat, id: EntryID, from: EntryID, newName: CName, to: EntryID)
}

/// What is about to change a file's data (`beforeModify`).
enum Modification {
    /// A write, allocation, copy into it or truncate through the open `file`.
    case data(OpenFile)
    /// A truncate by path (no open file); `keepingData` false when cut to nothing.
    case truncate(keepingData: Bool)
    /// An open with `O_TRUNC`, before the file is opened.
    case openTruncating
    /// A new hard link of it, before it is made.
    case link
}

/// The two sides of a `RENAME_EXCHANGE`.
struct Exchange {
    var moving: stat
    var movingID: EntryID
    var name: CName
    var parent: EntryID
    var replaced: stat
    var replacedID: EntryID
    var newName: CName
    var newParent: EntryID
    var oneBackingFile: Bool
}

extension FileSystemObserver {
    func beginOpen(_ inode: Inode) throws(Errno) {}
    func endOpen(_ inode: Inode) {}
    func created(_ status: stat, id: EntryID, name: CName, in parent: EntryID, opened: Bool) {}
    func opened(_ id: EntryID) {}
    func openAbandoned(_ id: EntryID) {}
    func used(_ id: EntryID) {}
    func resized(_ status: stat, id: EntryID) {}
    func closed(_ id: EntryID) {}
    func changed(_ id: EntryID) {}
    func removed(_ status: stat, id: EntryID, name: CName, from parent: EntryID) {}
    func moved(_ status: stat, id: EntryID, name: CName, from parent: EntryID, newName: CName, to newParent: EntryID) {}
    func renamedOver(_ status: stat, id: EntryID, name: CName, from parent: EntryID, newName: CName, to newParent: EntryID,
                     replacing replaced: stat, replacedID: EntryID) {
        removed(replaced, id: replacedID, name: newName, from: newParent)
        moved(status, id: id, name: name, from: parent, newName: newName, to: newParent)
    }
    func exchanged(_ exchange: Exchange) {}
    func beforeModify(_ inode: Inode, _ change: Modification, breaking: CloneBreaking) throws(Errno) {}
    func needsRoom(_ bytes: UInt64, reason: String) -> UInt64 { 0 }
    func willChangeData(_ inode: Inode, _ change: DataChange) {}
    func changedData(_ inode: Inode, _ change: DataChange) {}
    func synced(_ inode: Inode) {}
    func directorySynced(_ directory: EntryID) {}
    func beforeRemove(_ status: stat, name: CName, in descriptor: FileDescriptor, parent directory: EntryID) {}
    func removeAbandoned(_ status: stat, name: CName, parent directory: EntryID) {}
    func beforeMove(_ status: stat, id: EntryID, name: CName, from parent: EntryID, newName: CName, to newParent: EntryID) {}
    func moveAbandoned(_ status: stat, id: EntryID, name: CName, from parent: EntryID) {}
    func foundBehindMount(_ change: FoundChange) {}
}
