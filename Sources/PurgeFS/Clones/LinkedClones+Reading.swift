import PurgeCore
import PurgeSys

/// A member reads its primary's backing file while they share. The
/// primary's first write copies that file for its members and moves them
/// onto the copy under the primary's data lock, then writes in place. A
/// member's read holds the same lock from loading its descriptor to the
/// end of the read, so a read that loaded the old descriptor ends before
/// the primary is written (without it, such a read, delayed, returned the
/// primary's new bytes). A forgotten member (an orphan) reads the same way
/// until the primary's break gives it a copy.
extension LinkedClones {
    func readsSharedData(_ inode: Inode) -> Bool {
        isActive && inode.isRegularFile && inode.backing != inode.key
    }

    func readingSharedData<T>(of file: OpenFile, _ read: (FileDescriptor) throws(Errno) -> T) throws(Errno) -> T? {
        try withDataLocks(of: [file.inode]) { () throws(Errno) -> T? in
            // Broken away meanwhile: its data is its own.
            guard file.inode.backing != file.inode.key else { return nil }
            let descriptor = file.descriptor
            DebugSteps.reached("shared-read")
            return try read(descriptor)
        }
    }
}
