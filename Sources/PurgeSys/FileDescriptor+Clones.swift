import CLinux
import Glibc
import PurgeCore

extension FileDescriptor {
    /// Makes this file (open for writing) share all of `source`'s data, on a
    /// filesystem with reflinks. Wraps `ioctl(FICLONE)`.
    public func clone(from source: FileDescriptor) throws(Errno) {
        _ = try retryingInterrupts { clinux_ioctl_ficlone(rawValue, source.rawValue) }
    }

    /// Where the file's data lies on the device, writing dirty data out first
    /// so that every extent has its final place. Wraps `ioctl(FS_IOC_FIEMAP)`
    /// with `FIEMAP_FLAG_SYNC`.
    public func extents() throws(Errno) -> [FileExtent] {
        var result: [FileExtent] = []
        var start: UInt64 = 0
        var sync: Int32 = 1
        var buffer = [clinux_extent](repeating: clinux_extent(), count: 256)
        while true {
            let count = try buffer.withUnsafeMutableBufferPointer { pointer in
                Result { () throws(Errno) -> Int32 in
                    try retryingInterrupts { clinux_fiemap(rawValue, start, sync, pointer.baseAddress, UInt32(pointer.count)) }
                }
            }.get()
            sync = 0
            if count == 0 { return result }
            for extent in buffer[..<Int(count)] {
                result.append(FileExtent(physical: extent.physical, length: extent.length,
                                         isUnmapped: extent.flags & clinux_FIEMAP_EXTENT_UNKNOWN != 0))
            }
            let last = buffer[Int(count) - 1]
            if last.flags & clinux_FIEMAP_EXTENT_LAST != 0 { return result }
            start = last.logical + last.length
        }
    }
}

extension FileHandle {
    /// The handle as stored: its type and bytes.
    public var stored: (Int32, [UInt8]) { (type, bytes) }

    public init(stored: (Int32, [UInt8])) {
        self.type = stored.0
        self.bytes = stored.1
    }
}
