import Glibc
import PurgeCore
import PurgeSys

/// Making clones: a `copy_file_range` of a whole file into an empty one
/// (what coreutils `cp` sends, and what `purgefs clone` sends) becomes
/// `FICLONE` on a backing filesystem with reflinks, a linked clone without.
/// Anything else, or a clone the backend refuses, is an ordinary copy. The
/// mount's copy policy (`ContainerFileSystem.copyPolicy`), registered at its
/// assembly: the copy handler asks it and names no clone.
struct WholeFileCloning: CopyPolicy {
    let clones: any CloneBackend
    let events: Observers
    /// What a linked clone needs of the mount (never the filesystem).
    let making: CloneMaking

    /// Clones `source` into `destination` when the request copies all of it
    /// into an empty file; returns the bytes "copied", or nil to copy instead.
    func copy(
        from source: OpenFile, at sourceOffset: Int64, to destination: OpenFile, at offset: Int64,
        length: Int, flags: UInt32
    ) -> Int? {
        guard clones.makesClones, sourceOffset == 0, offset == 0, flags == 0,
              source.inode.isRegularFile, destination.inode.isRegularFile, source.inode.key != destination.inode.key,
              // A sparse clone is not one file to link: it is copied (clones of clones are not designed yet).
              // Asked of the table: a file that could not be opened just now is sparse all the same.
              !clones.isSparse(source.inode.key),
              let sourceStatus = try? source.descriptor.status(), let destinationStatus = try? destination.descriptor.status(),
              sourceStatus.st_size > 0, destinationStatus.st_size == 0, UInt64(length) >= UInt64(sourceStatus.st_size)
        else { return nil }
        DebugSteps.reached("clone-checked")
        // A clone costs no capacity: nothing to reserve.
        guard clones.clone(source, into: destination, making: making) else { return nil }
        events.used(source.inode.key)
        events.used(destination.inode.key)
        events.changedData(destination.inode, .overwrite(offset: 0, length: UInt64(sourceStatus.st_size)))
        events.synced(destination.inode)
        return Int(sourceStatus.st_size)
    }
}
