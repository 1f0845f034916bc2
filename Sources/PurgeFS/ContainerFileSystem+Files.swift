import CFuse
import Glibc
import PurgeSys

/// Operations on open files.
extension ContainerFileSystem {
    /// Opens the backing file for I/O with the caller's flags. `O_DIRECT` is
    /// honoured by the kernel's direct I/O mode instead, so the backing file
    /// needs no aligned buffers.
    func open(_ id: NodeID, flags: Int32) throws(Errno) -> OpenFile {
        let inode = inodes.inode(id)
        return OpenFile(descriptor: try inode.descriptor.reopen(flags: Self.backingFlags(flags)), inode: inode)
    }

    func create(parent: NodeID, name: CName, mode: mode_t, flags: Int32, caller: CallerIdentity) throws(Errno) -> (fuse_entry_param, OpenFile) {
        let directory = try creatableDirectory(parent, name)
        let file = try caller.perform { () throws(Errno) in
            try FileDescriptor.open(
                name, in: directory.descriptor, flags: Self.backingFlags(flags) | O_CREAT | O_NOFOLLOW, mode: mode)
        }
        do {
            let entry = try entry(for: try file.reopen(flags: OpenFlags.path))
            return (entry, OpenFile(descriptor: file, inode: inodes.inode(NodeID(entry.ino))))
        } catch {
            file.closeQuietly()
            throw error
        }
    }

    /// Emulates close(2) on the caller's descriptor: POSIX locks and
    /// close-time errors (NFS, quotas) happen here, not at release.
    func flush(_ handle: FileDescriptor) throws(Errno) {
        try handle.duplicate().close()
    }

    func sync(_ handle: FileDescriptor, dataOnly: Bool) throws(Errno) {
        try handle.sync(dataOnly: dataOnly)
    }

    func allocate(_ handle: FileDescriptor, mode: Int32, offset: Int64, length: Int64) throws(Errno) {
        try handle.allocate(mode: mode, offset: offset, length: length)
    }

    func seek(_ handle: FileDescriptor, offset: Int64, whence: Int32) throws(Errno) -> Int64 {
        try handle.seek(to: offset, whence: whence)
    }

    func copyRange(
        from source: FileDescriptor, at sourceOffset: Int64, to destination: FileDescriptor, at offset: Int64,
        length: Int, flags: UInt32
    ) throws(Errno) -> Int {
        try destination.copyRange(from: source, sourceOffset: sourceOffset, offset: offset, length: length, flags: flags)
    }

    private static func backingFlags(_ flags: Int32) -> Int32 {
        flags & ~(OpenFlags.direct | O_NOCTTY)
    }
}
