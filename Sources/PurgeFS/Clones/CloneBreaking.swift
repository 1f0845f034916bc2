import PurgeSys

/// What breaking a clone needs of the mount, and no more: room for the
/// copy (the growth policy, as a write asks it), the namespace locks and
/// the container's root (to rename the copy over its name under its
/// directory's lock), the inode table (to point open names at their new
/// data) and the events (a name whose backing file changed is uploaded
/// again). Made once at the mount's assembly (`MountAssembly.breaking`):
/// `CloneAttributes` holds it for `flatten`, `beforeModify` hands it to every
/// observer, and the cloud tier's `CloudMount` holds it for an eviction.
struct CloneBreaking: Sendable {
    let room: any GrowthPolicy
    let locks: NamespaceLocks
    let root: FileDescriptor
    let inodes: InodeTable
    let events: Observers
}
