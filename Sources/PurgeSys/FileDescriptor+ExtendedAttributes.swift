import CLinux
import Glibc

/// Extended attributes of the file a descriptor (possibly `O_PATH`) refers
/// to, through its `/proc/self/fd` link. The buffer convention is the
/// kernel's: an empty buffer asks for the size.
extension FileDescriptor {
    /// Wraps `getxattr(2)`.
    public func extendedAttribute(_ name: CName, into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        try checked(path: procPath) { path in clinux_getxattr(path, name, buffer.baseAddress, buffer.count) }
    }

    /// `extendedAttribute` of a descriptor that is not `O_PATH` (an open
    /// file's, which `fgetxattr` takes): no `/proc/self/fd` path to build,
    /// and no walk of it. Wraps `fgetxattr(2)`.
    public func openFileExtendedAttribute(_ name: CName, into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        try checked { clinux_fgetxattr(rawValue, name, buffer.baseAddress, buffer.count) }
    }

    /// Wraps `setxattr(2)`.
    public func setExtendedAttribute(_ name: CName, value: UnsafeRawBufferPointer, flags: Int32) throws(Errno) {
        _ = try checked(path: procPath) { path in clinux_setxattr(path, name, value.baseAddress, value.count, flags) }
    }

    /// Wraps `listxattr(2)`.
    public func listExtendedAttributes(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        try checked(path: procPath) { path in clinux_listxattr(path, buffer.baseAddress?.assumingMemoryBound(to: CChar.self), buffer.count) }
    }

    /// Wraps `removexattr(2)`.
    public func removeExtendedAttribute(_ name: CName) throws(Errno) {
        _ = try checked(path: procPath) { path in clinux_removexattr(path, name) }
    }
}
