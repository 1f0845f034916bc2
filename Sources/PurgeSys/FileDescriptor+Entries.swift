import CLinux
import Glibc

/// Flags of `renameat2(2)`.
public struct RenameFlags: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// `RENAME_NOREPLACE`
    public static let noReplace = RenameFlags(rawValue: clinux_RENAME_NOREPLACE)
    /// `RENAME_EXCHANGE`
    public static let exchange = RenameFlags(rawValue: clinux_RENAME_EXCHANGE)
    /// `RENAME_WHITEOUT`
    public static let whiteout = RenameFlags(rawValue: clinux_RENAME_WHITEOUT)
}

/// Directory-entry operations, all relative to a held directory descriptor.
extension FileDescriptor {
    /// Wraps `mkdirat(2)`.
    public func makeDirectory(_ name: CName, mode: mode_t) throws(Errno) {
        _ = try checked { mkdirat(rawValue, name, mode) }
    }

    /// Creates a special file (fifo, socket, device) or an empty regular file. Wraps `mknodat(2)`.
    public func makeNode(_ name: CName, mode: mode_t, device: dev_t) throws(Errno) {
        _ = try checked { mknodat(rawValue, name, mode, device) }
    }

    /// Creates `name` as a symbolic link holding `target`. Wraps `symlinkat(2)`.
    public func makeSymbolicLink(_ name: CName, target: CName) throws(Errno) {
        _ = try checked { symlinkat(target, rawValue, name) }
    }

    /// Removes a non-directory entry, or an empty directory with `directory`.
    /// Wraps `unlinkat(2)`.
    public func unlink(_ name: CName, directory: Bool = false) throws(Errno) {
        _ = try checked { unlinkat(rawValue, name, directory ? AT_REMOVEDIR : 0) }
    }

    /// Renames `name` in this directory to `newName` in `newDirectory`. Wraps `renameat2(2)`.
    public func rename(
        _ name: CName, to newName: CName, in newDirectory: FileDescriptor, flags: RenameFlags = []
    ) throws(Errno) {
        _ = try checked { clinux_renameat2(rawValue, name, newDirectory.rawValue, newName, flags.rawValue) }
    }

    /// Makes `newName` in `directory` a hard link to the file this descriptor
    /// (possibly `O_PATH`) refers to, through its `/proc/self/fd` link, which
    /// needs no `CAP_DAC_READ_SEARCH`. Wraps `linkat(2)` with `AT_SYMLINK_FOLLOW`.
    public func link(as newName: CName, in directory: FileDescriptor) throws(Errno) {
        _ = try checked(path: procPath) { source in linkat(AT_FDCWD, source, directory.rawValue, newName, clinux_AT_SYMLINK_FOLLOW) }
    }

    /// Makes `newName` in `directory` a hard link to the entry `name` of this
    /// directory (a symbolic link itself, never its target). Wraps `linkat(2)`.
    public func link(_ name: CName, as newName: CName, in directory: FileDescriptor) throws(Errno) {
        _ = try checked { linkat(rawValue, name, directory.rawValue, newName, 0) }
    }

    /// Where this descriptor's file is now, as the kernel names it (its
    /// `/proc/self/fd` link; " (deleted)" when it has no name). Wraps `readlink(2)`.
    public func currentPath() throws(Errno) -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = try checked(path: procPath) { path in readlink(path, &buffer, buffer.count - 1) }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Reads the target of the symbolic link this `O_PATH` descriptor refers to.
    /// Wraps `readlinkat(2)` with an empty path.
    public func readSymbolicLink() throws(Errno) -> [CChar] {
        var capacity = Int(PATH_MAX) + 1
        while true {
            var buffer = [CChar](repeating: 0, count: capacity)
            let n = try checked { readlinkat(rawValue, "", &buffer, capacity) }
            if n < capacity {
                buffer.removeSubrange(n...)
                return buffer
            }
            capacity *= 2
        }
    }
}
