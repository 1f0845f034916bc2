import Glibc
import PurgeCore
import PurgeSys

/// Making clones: a `copy_file_range` of a whole file into an empty one
/// (what coreutils `cp` sends, and what `purgefs clone` sends) becomes
/// `FICLONE` on a backing filesystem with reflinks. Anything else, or a
/// clone the backing filesystem refuses, is an ordinary copy.
extension ContainerFileSystem {
    /// Clones `source` into `destination` when the request copies all of it
    /// into an empty file; returns the bytes "copied", or nil to copy instead.
    func cloneWhole(
        from source: OpenFile, at sourceOffset: Int64, to destination: OpenFile, at offset: Int64,
        length: Int, flags: UInt32
    ) -> Int? {
        guard state.clones.reflinks || state.linked.makesClones, sourceOffset == 0, offset == 0, flags == 0,
              source.inode.isRegularFile, destination.inode.isRegularFile, source.inode.key != destination.inode.key,
              let sourceStatus = try? source.descriptor.status(), let destinationStatus = try? destination.descriptor.status(),
              sourceStatus.st_size > 0, destinationStatus.st_size == 0, UInt64(length) >= UInt64(sourceStatus.st_size)
        else { return nil }
        // A clone costs no capacity: nothing to reserve.
        if !state.clones.reflinks {
            guard cloud?.isUbiquitous(source.inode) != true, cloud?.isUbiquitous(destination.inode) != true,
                  state.linked.clone(source, into: destination, filesystem: self)
            else { return nil }
            events.used(source.inode.key)
            events.used(destination.inode.key)
            events.synced(destination.inode)  // a clone is durable once made (its registry is synced)
            return Int(sourceStatus.st_size)
        }
        do {
            try state.clones.clone(source.descriptor, source.inode.key, into: destination.descriptor, destination.inode.key, state: state)
        } catch {
            return nil
        }
        events.used(source.inode.key)
        events.used(destination.inode.key)
        events.synced(destination.inode)
        return Int(sourceStatus.st_size)
    }

    /// Room for what a write of `length` bytes into a clone may copy
    /// (copy-on-write moves whole blocks): asked like any growth, purging
    /// first, `ENOSPC` only when nothing purgeable is left; both files are
    /// untouched then. Nothing to ask for a file that shares nothing.
    /// Returns the amount reserved, to be released after the write.
    func makeRoomForBreak(_ file: OpenFile, length: Int) throws(Errno) -> UInt64 {
        let shared = state.clones.sharedBytes(of: file.inode.key)
        guard shared > 0, length > 0 else { return 0 }
        // A range not aligned to blocks touches one more.
        let need = min((UInt64(length) + 4095) / 4096 * 4096 + 4096, shared)
        return try makeRoom(bytes: need)
    }
}
