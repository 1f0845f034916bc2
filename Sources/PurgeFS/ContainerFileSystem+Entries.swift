import CFuse
import Glibc
import PurgeSys

/// Operations on names and inode attributes.
extension ContainerFileSystem {
    func lookup(parent: NodeID, name: CName) throws(Errno) -> fuse_entry_param {
        try lookUp(name, in: inodes.inode(parent))
    }

    func forget(_ id: NodeID, count: UInt64) {
        guard id != .root else { return }
        inodes.forget(id, count: count)
    }

    func setAttributes(
        of id: NodeID, to new: stat, changing fields: Int32, handle: FileDescriptor?
    ) throws(Errno) -> stat {
        let inode = inodes.inode(id)
        let file = inode.descriptor
        if fields & FUSE_SET_ATTR_MODE != 0 {
            try file.changeMode(new.st_mode & 0o7777)
        }
        let setsUser = fields & FUSE_SET_ATTR_UID != 0
        let setsGroup = fields & FUSE_SET_ATTR_GID != 0
        if setsUser || setsGroup {
            try file.changeOwner(user: setsUser ? new.st_uid : uid_t.max, group: setsGroup ? new.st_gid : gid_t.max)
        }
        if fields & FUSE_SET_ATTR_SIZE != 0 {
            if let handle { try handle.truncate(to: Int64(new.st_size)) } else {
                try file.truncateThroughPath(to: Int64(new.st_size))
            }
        }
        let setsAccess = fields & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW) != 0
        let setsModification = fields & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW) != 0
        if setsAccess || setsModification {
            let access = fields & FUSE_SET_ATTR_ATIME_NOW != 0 ? TimeSpec.now
                : fields & FUSE_SET_ATTR_ATIME != 0 ? new.st_atim : TimeSpec.omit
            let modification = fields & FUSE_SET_ATTR_MTIME_NOW != 0 ? TimeSpec.now
                : fields & FUSE_SET_ATTR_MTIME != 0 ? new.st_mtim : TimeSpec.omit
            try file.setTimes(access: access, modification: modification)
        }
        return visible(try file.status())
    }

    func readSymbolicLink(_ id: NodeID) throws(Errno) -> [CChar] {
        var target = try inodes.inode(id).descriptor.readSymbolicLink()
        target.append(0)
        return target
    }

    func makeNode(parent: NodeID, name: CName, mode: mode_t, device: dev_t, caller: CallerIdentity) throws(Errno) -> fuse_entry_param {
        let directory = try creatableDirectory(parent, name)
        try caller.perform { () throws(Errno) in try directory.descriptor.makeNode(name, mode: mode, device: device) }
        return try lookUp(name, in: directory)
    }

    func makeDirectory(parent: NodeID, name: CName, mode: mode_t, caller: CallerIdentity) throws(Errno) -> fuse_entry_param {
        let directory = try creatableDirectory(parent, name)
        try caller.perform { () throws(Errno) in try directory.descriptor.makeDirectory(name, mode: mode) }
        return try lookUp(name, in: directory)
    }

    func makeSymbolicLink(parent: NodeID, name: CName, target: CName, caller: CallerIdentity) throws(Errno) -> fuse_entry_param {
        let directory = try creatableDirectory(parent, name)
        try caller.perform { () throws(Errno) in try directory.descriptor.makeSymbolicLink(name, target: target) }
        return try lookUp(name, in: directory)
    }

    func makeHardLink(to id: NodeID, parent: NodeID, name: CName) throws(Errno) -> fuse_entry_param {
        let directory = try creatableDirectory(parent, name)
        try inodes.inode(id).descriptor.link(as: name, in: directory.descriptor)
        return try lookUp(name, in: directory)
    }

    func unlink(parent: NodeID, name: CName, directory isDirectory: Bool) throws(Errno) {
        let directory = inodes.inode(parent)
        if isHidden(name, in: directory) { throw Errno.noEntry }
        try directory.descriptor.unlink(name, directory: isDirectory)
    }

    func rename(parent: NodeID, name: CName, newParent: NodeID, newName: CName, flags: UInt32) throws(Errno) {
        let source = inodes.inode(parent)
        let destination = inodes.inode(newParent)
        if isHidden(name, in: source) { throw Errno.noEntry }
        if isHidden(newName, in: destination) { throw Errno.notPermitted }
        try source.descriptor.rename(name, to: newName, in: destination.descriptor, flags: RenameFlags(rawValue: flags))
    }

    /// The directory `parent`, where `name` may be created: the state
    /// directory's name is reserved (`EPERM`), whatever the caller makes.
    func creatableDirectory(_ parent: NodeID, _ name: CName) throws(Errno) -> Inode {
        let directory = inodes.inode(parent)
        if isHidden(name, in: directory) { throw Errno.notPermitted }
        return directory
    }
}
