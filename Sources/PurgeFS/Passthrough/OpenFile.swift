import CFuse
import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// A file the kernel holds open: the backing descriptor and the inode it
/// belongs to. The file handle (`fh`) given to the kernel is a retained
/// reference to it, released at `release`: the kernel brackets every use of
/// a handle between open and release, so no table lookup is needed per
/// read or write.
///
/// While it is open its descriptor stands for the inode's (`Inode.lend`),
/// so an open file costs the daemon one descriptor.
///
/// The descriptor can be replaced (`replaceDescriptor`) when the inode moves
/// to another backing file, as a linked clone does at its first
/// modification; a replaced descriptor stays open until the file is
/// released, so a read in flight on it finishes safely. While the inode's
/// data is shared, a file opened for writing holds a read-only descriptor
/// (it is *protected*: `OpenFile+Protection`, the clone backend's).
final class OpenFile: Sendable {
    let inode: Inode
    /// The backing open flags the caller asked for.
    let flags: Int32
    /// Its number, taken as its open began: what features key their own
    /// tables of open files by.
    let handle: FileHandleID
    private let current: Atomic<Int32>
    private let retired = Mutex<[Int32]>([])
    /// Whether its close was announced (`announceClosed`).
    private let closed = Atomic<Bool>(false)

    /// Takes over `descriptor`, opened with `flags` (or read-only instead,
    /// when the inode's data is shared: `admitted` false), and keeps the
    /// inode's own descriptor from eviction while the file is open. When
    /// that fails (the inode's descriptor was evicted and cannot be
    /// reopened), `descriptor` is closed and the error thrown.
    init(descriptor: FileDescriptor, inode: Inode, flags: Int32, handle: FileHandleID = .next()) throws(Errno) {
        do { try inode.pin() } catch {
            descriptor.closeQuietly()
            throw error
        }
        self.handle = handle
        self.inode = inode
        self.flags = flags
        self.current = Atomic(descriptor.rawValue)
        inode.sharing.admit(self, writing: Self.writes(flags))
        inode.lend(descriptor)
        inode.pool.fileOpened()
    }

    deinit {
        // The descriptor may stand for the inode's (`Inode.lend`): the inode
        // takes another open file's, or one of its own, before it is closed.
        let descriptors = [current.load(ordering: .acquiring)] + retired.withLock { $0 }
        let others = inode.sharing.openFiles
        let kept = inode.reclaim(descriptors, others: others)
        withExtendedLifetime(others) {}
        inode.pool.fileClosed()
        for raw in descriptors where !kept.contains(raw) { FileDescriptor(rawValue: raw).closeQuietly() }
        inode.sharing.released(handle)
        inode.unpin()
    }

    var descriptor: FileDescriptor { FileDescriptor(rawValue: current.load(ordering: .acquiring)) }

    /// True the first time only: its close is announced once.
    func announceClosed() -> Bool {
        !closed.exchange(true, ordering: .acquiringAndReleasing)
    }

    /// Opened for writing.
    var isWritable: Bool { Self.writes(flags) }

    static func writes(_ flags: Int32) -> Bool { flags & O_ACCMODE != O_RDONLY }

    /// Replaces the descriptor by `new` (taken over); the old one stays open
    /// until the file is released.
    func replaceDescriptor(with new: FileDescriptor) {
        let old = current.exchange(new.rawValue, ordering: .acquiringAndReleasing)
        retired.withLock { $0.append(old) }
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
