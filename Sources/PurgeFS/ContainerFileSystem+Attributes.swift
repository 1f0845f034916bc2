import CFuse
import Glibc
import PurgeSys

/// The container's own extended attributes, statfs and access.
///
/// Extended attributes are reached through the inode's `/proc/self/fd` link,
/// which for a symlink would follow it; Linux allows no `user.*` attributes on
/// symlinks, so a symlink answers as one without attributes.
extension ContainerFileSystem {
    /// With an empty buffer, the size of the value (the size probe).
    func extendedAttribute(of id: NodeID, name: CName, into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        let inode = inodes.inode(id)
        if inode.isSymbolicLink { throw Errno.noData }
        return try inode.descriptor.extendedAttribute(name, into: buffer)
    }

    func setExtendedAttribute(of id: NodeID, name: CName, value: UnsafeRawBufferPointer, flags: Int32) throws(Errno) {
        let inode = inodes.inode(id)
        if inode.isSymbolicLink { throw Errno.notPermitted }
        try inode.descriptor.setExtendedAttribute(name, value: value, flags: flags)
    }

    func listExtendedAttributes(of id: NodeID, into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        let inode = inodes.inode(id)
        if inode.isSymbolicLink { return 0 }
        return try inode.descriptor.listExtendedAttributes(into: buffer)
    }

    func removeExtendedAttribute(of id: NodeID, name: CName) throws(Errno) {
        let inode = inodes.inode(id)
        if inode.isSymbolicLink { throw Errno.noData }
        try inode.descriptor.removeExtendedAttribute(name)
    }

    func fileSystemStatus() throws(Errno) -> statvfs {
        try root.fileSystemStatus()
    }

    /// Checks access as the caller, groups included.
    func checkAccess(_ id: NodeID, mask: Int32, caller: CallerIdentity) throws(Errno) {
        let inode = inodes.inode(id)
        if mask == F_OK { return }  // it exists: the kernel just looked it up
        try caller.perform { () throws(Errno) in try inode.descriptor.checkAccess(mask) }
    }
}
