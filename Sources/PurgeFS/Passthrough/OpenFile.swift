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
/// The descriptor can be replaced (`repoint`) when the inode moves to another
/// backing file, as a linked clone does at its first modification; a
/// replaced descriptor stays open until the file is released, so a read in
/// flight on it finishes safely. While the inode's data is shared, a file
/// opened for writing holds a read-only descriptor (it is *protected*) and
/// gets its writable one back after the clone is broken.
final class OpenFile: Sendable {
    let inode: Inode
    /// The backing open flags the caller asked for.
    let flags: Int32
    /// Where the file was made, when it was made by this open (`create`).
    let createdAs: LinkedCloneRegistry.Name?
    /// The crash era it was opened in (`CrashRecorder.era`): after a crash
    /// it answers `EIO`, as a descriptor would after a reboot.
    let era: UInt64
    private let current: Atomic<Int32>
    private let protected: Atomic<Bool>
    private let counted: Atomic<Bool>
    private let retired = Mutex<[Int32]>([])

    /// Takes over `descriptor`, opened with `flags` (or read-only instead,
    /// when the inode's data is shared: `admitted` false), and keeps the
    /// inode's own descriptor from eviction while the file is open.
    init(descriptor: FileDescriptor, inode: Inode, flags: Int32, createdAs: LinkedCloneRegistry.Name? = nil, era: UInt64 = 0) throws(Errno) {
        try inode.pin()
        self.era = era
        self.inode = inode
        self.flags = flags
        self.createdAs = createdAs
        self.current = Atomic(descriptor.rawValue)
        self.protected = Atomic(false)
        self.counted = Atomic(false)
        let writing = Self.writes(flags)
        let admitted = inode.admit(self, writing: writing)
        counted.store(admitted, ordering: .relaxed)
        protected.store(writing && !admitted, ordering: .relaxed)
    }

    deinit {
        descriptor.closeQuietly()
        for old in retired.withLock({ $0 }) { FileDescriptor(rawValue: old).closeQuietly() }
        if counted.load(ordering: .relaxed) { inode.dismissWriter() }
        inode.unpin()
    }

    var descriptor: FileDescriptor { FileDescriptor(rawValue: current.load(ordering: .acquiring)) }

    /// Opened for writing.
    var isWritable: Bool { Self.writes(flags) }
    /// Opened for writing but holding a read-only descriptor for now.
    var isProtected: Bool { protected.load(ordering: .acquiring) }

    static func writes(_ flags: Int32) -> Bool { flags & O_ACCMODE != O_RDONLY }

    /// Replaces the descriptor by `new` (taken over); `protecting` says it is
    /// a read-only stand-in for a writable one.
    func repoint(to new: FileDescriptor, protecting: Bool) {
        let old = current.exchange(new.rawValue, ordering: .acquiringAndReleasing)
        retired.withLock { $0.append(old) }
        // A protected file is no writer.
        if protecting, counted.exchange(false, ordering: .relaxed) { inode.dismissWriter() }
        protected.store(protecting && isWritable, ordering: .releasing)
    }

    /// Gives a protected file its writable descriptor back, reopened from
    /// the inode, once its data is no longer shared. No-op otherwise.
    func unprotect() throws(Errno) {
        guard isProtected, inode.admitWriter() else { return }
        do {
            let writable = try inode.withDescriptor { (path) throws(Errno) in try path.reopen(flags: flags & ~(O_CREAT | O_EXCL | O_TRUNC)) }
            counted.store(true, ordering: .relaxed)
            repoint(to: writable, protecting: false)
        } catch {
            inode.dismissWriter()
            throw error
        }
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
