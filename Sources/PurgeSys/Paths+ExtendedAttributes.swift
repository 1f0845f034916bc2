import CLinux
import Glibc

/// Extended attributes of a file named by a path, following symlinks, as a
/// command reads and writes purgefs's `user.purgefs.*` names on a mount.
/// (The adapter works on descriptors: `FileDescriptor+ExtendedAttributes`.)
extension Paths {
    /// The whole value of the attribute `name` of the file at `path`. Asks
    /// for the size, then reads; should the value grow in between (`ERANGE`),
    /// asks again. Wraps `getxattr(2)`.
    public static func extendedAttribute(_ name: String, of path: String) throws(Errno) -> [UInt8] {
        let cName = Array(name.utf8CString)
        for _ in 0..<8 {
            let size = try checked(path: path) { cPath in
                cName.withUnsafeBufferPointer { clinux_getxattr(cPath, $0.baseAddress!, nil, 0) }
            }
            // One byte more than announced: a value that grew by then is caught as ERANGE or a full buffer.
            var value = [UInt8](repeating: 0, count: size + 1)
            let count: Int
            do throws(Errno) {
                // `withUnsafeMutableBytes` rethrows untyped; carry the `Errno` out in a `Result`.
                count = try value.withUnsafeMutableBytes { buffer in
                    Result { () throws(Errno) -> Int in
                        try checked(path: path) { cPath in
                            cName.withUnsafeBufferPointer { clinux_getxattr(cPath, $0.baseAddress!, buffer.baseAddress, buffer.count) }
                        }
                    }
                }.get()
            } catch where error == .outOfRange {
                continue
            }
            if count > size { continue }
            return Array(value[..<count])
        }
        throw Errno.outOfRange
    }

    /// Sets the attribute `name` of the file at `path` to `value`, creating
    /// or replacing it. Wraps `setxattr(2)`.
    public static func setExtendedAttribute(_ name: String, of path: String, to value: [UInt8]) throws(Errno) {
        let cName = Array(name.utf8CString)
        _ = try value.withUnsafeBytes { bytes in
            Result { () throws(Errno) -> Int32 in
                try checked(path: path) { cPath in
                    cName.withUnsafeBufferPointer { clinux_setxattr(cPath, $0.baseAddress!, bytes.baseAddress, bytes.count, 0) }
                }
            }
        }.get()
    }
}
