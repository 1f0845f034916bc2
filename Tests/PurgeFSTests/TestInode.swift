import Glibc
import PurgeCore
import PurgeSys
import XCTest

@testable import PurgeFS

/// A regular file's node for in-process tests that need an `Inode` and never
/// touch its data: it holds a descriptor of `/`, with node ID 2 and identity (1, 2).
func makeTestInode() throws -> Inode {
    let root = open("/", O_RDONLY | O_DIRECTORY)
    XCTAssertGreaterThanOrEqual(root, 0)
    let file = open("/", O_RDONLY | O_DIRECTORY)
    let pool = DescriptorPool(filesystem: FileDescriptor(rawValue: root), openFilesLimit: 1024)
    let id = EntryID(device: 1, inode: 2)
    return Inode(id: NodeID(2), descriptor: FileDescriptor(rawValue: file), key: id, backing: id, fileType: S_IFREG, pool: pool)
}
