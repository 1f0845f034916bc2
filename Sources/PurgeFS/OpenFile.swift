import CFuse
import PurgeSys

/// A file the kernel holds open: the backing descriptor and the inode it
/// belongs to. The file handle (`fh`) given to the kernel is a retained
/// reference to it, released at `release`: the kernel brackets every use of
/// a handle between open and release, so no table lookup is needed per
/// read or write.
final class OpenFile: Sendable {
    let descriptor: FileDescriptor
    let inode: Inode

    /// Takes over `descriptor`, and keeps the inode's own descriptor from
    /// eviction while the file is open.
    init(descriptor: FileDescriptor, inode: Inode) throws(Errno) {
        try inode.pin()
        self.descriptor = descriptor
        self.inode = inode
    }

    deinit {
        descriptor.closeQuietly()
        inode.unpin()
    }

    /// Stores a new reference in the reply's file info.
    func attach(to info: UnsafeMutablePointer<fuse_file_info>) {
        info.pointee.fh = UInt64(UInt(bitPattern: Unmanaged.passRetained(self).toOpaque()))
    }

    /// The open file behind a request's file info.
    static func from(_ info: UnsafeMutablePointer<fuse_file_info>) -> OpenFile {
        Unmanaged<OpenFile>.fromOpaque(UnsafeRawPointer(bitPattern: UInt(info.pointee.fh))!).takeUnretainedValue()
    }

    /// Drops the kernel's reference (at release, or when the open reply failed).
    static func detach(from info: UnsafeMutablePointer<fuse_file_info>) {
        Unmanaged<OpenFile>.fromOpaque(UnsafeRawPointer(bitPattern: UInt(info.pointee.fh))!).release()
    }
}
