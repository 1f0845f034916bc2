import PurgeCore
import PurgeSys

/// A file's bytes when its backing file does not hold all of them (a
/// sparse linked clone: the blocks it shares are holes there, read from
/// another file). The handlers read, write, truncate, punch, sync and seek
/// such a file through its view instead of its descriptor; the kernel
/// never passes it through (it would read the holes).
protocol DataView: Sendable {
    /// Reads up to `buffer.count` bytes at `offset`; fewer only at the end.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws(Errno) -> Int
    /// Writes `buffer` at `offset`, returning the bytes written.
    func write(_ buffer: UnsafeRawBufferPointer, at offset: UInt64) throws(Errno) -> Int
    func truncate(to size: UInt64) throws(Errno)
    /// `fallocate`'s `PUNCH_HOLE` (the size kept).
    func punch(offset: UInt64, length: UInt64) throws(Errno)
    /// Makes what was written through the view durable.
    func sync() throws(Errno)
    /// `lseek`'s `SEEK_DATA` or `SEEK_HOLE` from `offset`; `ENXIO` at or past the end.
    func seek(to offset: UInt64, whence: Int32) throws(Errno) -> UInt64
}

/// Which files have a data view, asked by the handlers that read, write or
/// hand out a file's descriptor. The mount registers one (`SparseMemberViews`,
/// in Clones/: block sharing's sparse members), as it registers the growth
/// and copy policies, so the data paths name no feature.
protocol DataViews: Sendable {
    /// `id`'s view, or nil when its backing file holds all its bytes. A
    /// read asks once and reads through what it got (a view dropped
    /// meanwhile still reads what it read before).
    /// Throws `EIO` when it has a view that cannot be opened now: a caller
    /// never takes its backing file for all of its bytes.
    func view(of id: EntryID) throws(Errno) -> (any DataView)?
    /// Runs `body` with `inode`'s view under what orders changes of its
    /// data, the view asked for again under it (it may have been dropped
    /// or made plain first); nil, `body` not run, when there is none (any
    /// more). Every change through a view goes through here.
    func withView<T>(of inode: Inode, _ body: (any DataView) throws(Errno) -> T) throws(Errno) -> T?
    /// Puts all of `inode`'s bytes in its backing file, so that it has no
    /// view any more (before a change its view does not make), asking for
    /// room as a first write does.
    func makePlain(_ inode: Inode) throws(Errno)
    /// Whether a read of `inode` may read data that another file changes
    /// in place (a linked clone reading its original's file): a hint, asked
    /// first, that says which reads go through `readingShared`.
    func readsShared(_ inode: Inode) -> Bool
    /// Runs `read` with `file`'s descriptor, loaded under what orders the
    /// other file's first write after it: that write waits for the read,
    /// and a read after it finds `file` on a copy. nil, `read` not run,
    /// when `file` shares nothing (any more).
    func readingShared<T>(_ file: OpenFile, _ read: (FileDescriptor) throws(Errno) -> T) throws(Errno) -> T?
}
