import CLinux
import Glibc

/// A persistent handle of a file, as the filesystem exports it: it names the
/// inode (and its generation) without holding it open, so a descriptor can
/// be closed and the same file reopened later, even after a rename.
public struct FileHandle: Hashable, Sendable {
    let type: Int32
    let bytes: [UInt8]

    /// The handle of the file `descriptor` refers to (possibly `O_PATH`).
    /// Fails with `EOPNOTSUPP` on filesystems that do not export handles.
    /// Wraps `name_to_handle_at(2)` with `AT_EMPTY_PATH`.
    public init(of descriptor: FileDescriptor) throws(Errno) {
        var type: Int32 = 0
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = try checked { clinux_handle_of(descriptor.rawValue, &type, &buffer, UInt32(buffer.count)) }
        self.type = type
        self.bytes = Array(buffer[..<Int(count)])
    }

    /// Opens the file again, relative to any descriptor on its filesystem.
    /// `ESTALE` if the file is gone. Needs `CAP_DAC_READ_SEARCH`.
    /// Wraps `open_by_handle_at(2)`.
    public func open(on filesystem: FileDescriptor, flags: Int32) throws(Errno) -> FileDescriptor {
        let fd = try bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(Errno) -> Int32 in
                try retryingInterrupts {
                    clinux_open_by_handle(filesystem.rawValue, type, buffer.baseAddress, UInt32(buffer.count), flags | O_CLOEXEC)
                }
            }
        }.get()
        return FileDescriptor(rawValue: fd)
    }
}
