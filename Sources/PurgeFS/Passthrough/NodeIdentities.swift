import Glibc
import PurgeCore
import PurgeSys

/// What a name stands for and what the mount shows of it: the questions
/// every path that turns a name into an identity, makes a node or presents
/// attributes asks here, and nowhere else. The mount registers its clone
/// backend (`CloneBackend`, in Clones/, refines this): under linked clones
/// a name may stand for another identity than its backing file's.
protocol NodeIdentities: Sendable {
    /// The identity of `name` in `parent`, whose backing file has `status`
    /// (lookup, create, unlink, rename, the purger, changes behind the mount).
    func identity(of status: stat, parent: EntryID, name: CName) -> EntryID
    /// The identity of a listed name from its directory entry alone (readdir,
    /// readdirplus): the one `identity(of:)` gives, so `d_ino` is `st_ino`.
    func identity(ofListed backing: EntryID, parent: EntryID, name: CName) -> EntryID
    /// Whether `backing` is data other identities share (a truncating purge
    /// and a cloud eviction must not destroy it; the kernel passthrough
    /// refuses it).
    func sharesBacking(_ backing: EntryID) -> Bool
    /// A node was made for `inode`, whose backing file has `status`. False
    /// when the node cannot stand for its identity (a linked clone forgotten
    /// since its name was read: purged, unlinked or broken): the caller
    /// drops it and reads the name again.
    func adopted(_ inode: Inode, status: stat) -> Bool
    /// What the mount shows for identity `id` whose backing file has `status`.
    func present(_ status: stat, as id: EntryID) -> stat
    /// A descriptor (`O_PATH`, the caller's to close) of the inode holding
    /// `id`'s mode, owner, times and extended attributes when that is not
    /// its backing file (a linked clone's anchor); nil otherwise.
    func attributeHolder(of id: EntryID) throws(Errno) -> FileDescriptor?
}
