import Glibc

/// One entry as `readdir(3)` returns it: valid until the next call on the stream.
public struct DirectoryEntry {
    public let name: CName
    public let inode: UInt64
    /// `DT_*` type.
    public let type: UInt8
    /// The position just after this entry, for resuming.
    public let nextOffset: Int64

    /// `.` or `..`: listed, but never looked up.
    public var isDotOrDotDot: Bool {
        name[0] == 0x2E && (name[1] == 0 || (name[1] == 0x2E && name[2] == 0))
    }
}

/// An open directory read entry by entry, resumable at any offset it handed out.
/// Not thread-safe: its owner serializes access.
public final class DirectoryStream {
    private let stream: OpaquePointer
    /// The position the stream is at, as handed out in `nextOffset`.
    public private(set) var offset: Int64 = 0

    /// Opens `directory` for reading. Takes ownership of a fresh descriptor
    /// to it; `directory` stays the caller's. Wraps `fdopendir(3)`.
    public init(_ directory: FileDescriptor) throws(Errno) {
        let own = try FileDescriptor.open(".", in: directory, flags: O_RDONLY | O_DIRECTORY)
        guard let stream = fdopendir(own.rawValue) else {
            let error = Errno.current
            own.closeQuietly()
            throw error
        }
        self.stream = stream
    }

    deinit { closedir(stream) }

    /// The descriptor under the stream, for `fsync`.
    public var descriptor: FileDescriptor { FileDescriptor(rawValue: dirfd(stream)) }

    /// Moves to `offset` (0, or an offset this stream handed out). Wraps `seekdir(3)`.
    public func seek(to offset: Int64) {
        guard offset != self.offset else { return }
        if offset == 0 { rewinddir(stream) } else { seekdir(stream, Int(offset)) }
        self.offset = offset
    }

    /// The next entry, or `nil` at the end. Wraps `readdir(3)`.
    public func next() throws(Errno) -> DirectoryEntry? {
        errno = 0
        guard let raw = readdir(stream) else {
            if errno != 0 { throw Errno.current }
            return nil
        }
        offset = Int64(raw.pointee.d_off)
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        let name = (UnsafeRawPointer(raw) + nameOffset).assumingMemoryBound(to: CChar.self)
        return DirectoryEntry(
            name: name, inode: UInt64(raw.pointee.d_ino), type: raw.pointee.d_type,
            nextOffset: Int64(raw.pointee.d_off))
    }
}
