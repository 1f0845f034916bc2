import PurgeCore
import PurgeSys

/// A sparse member's file is its data view: own blocks in its anchor,
/// shared ones read from its base (`SparseMemberFile`).
extension SparseMemberFile: DataView {}

/// The mount's data views (`ContainerFileSystem.dataViews`, registered at
/// its assembly): block sharing's sparse members, through the clone
/// backend (none under reflinks and `NoClones`). A change runs under the
/// member's data lock, the member asked for again under it
/// (`CloneBackend.withSparseFile`); a read asks once. Making one plain is
/// a flatten. A linked clone's reads of its original's file are ordered
/// before the original's first write (`CloneBackend.readingSharedData`).
struct SparseMemberViews: DataViews {
    let clones: any CloneBackend
    /// What a flatten needs of the mount (room, never the filesystem).
    let breaking: CloneBreaking

    func view(of id: EntryID) throws(Errno) -> (any DataView)? {
        if let file = clones.sparseFile(of: id) { return file }
        // Sparse, its file not opened (the reason is in the daemon's log): never its anchor's holes.
        if clones.isSparse(id) { throw Errno.ioError }
        return nil
    }

    func withView<T>(of inode: Inode, _ body: (any DataView) throws(Errno) -> T) throws(Errno) -> T? {
        try clones.withSparseFile(of: inode) { (file) throws(Errno) -> T in try body(file) }
    }

    func makePlain(_ inode: Inode) throws(Errno) {
        try clones.flatten(inode, breaking: breaking)
    }

    func readsShared(_ inode: Inode) -> Bool { clones.readsSharedData(inode) }

    func readingShared<T>(_ file: OpenFile, _ read: (FileDescriptor) throws(Errno) -> T) throws(Errno) -> T? {
        try clones.readingSharedData(of: file, read)
    }
}
