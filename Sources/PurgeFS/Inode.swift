import PurgeCore
import Glibc
import PurgeSys

/// A backing file the kernel knows by a `NodeID`, held open with an `O_PATH`
/// descriptor so every operation reaches it by descriptor, never by a path
/// string: renames of it or of any directory above it cannot misdirect us,
/// and a ~4 KB path costs nothing.
final class Inode: Sendable {
    let id: NodeID
    /// `O_PATH | O_NOFOLLOW` descriptor of the backing file.
    let descriptor: FileDescriptor
    let key: EntryID
    /// `S_IFMT` bits: the file type never changes for an inode.
    let fileType: mode_t

    init(id: NodeID, descriptor: FileDescriptor, key: EntryID, fileType: mode_t) {
        self.id = id
        self.descriptor = descriptor
        self.key = key
        self.fileType = fileType
    }

    var isDirectory: Bool { fileType == S_IFDIR }
    var isSymbolicLink: Bool { fileType == S_IFLNK }
    var isRegularFile: Bool { fileType == S_IFREG }

    deinit { descriptor.closeQuietly() }
}
