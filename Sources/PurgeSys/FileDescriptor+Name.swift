import Glibc

extension FileDescriptor {
    /// The path the kernel shows for this descriptor (its `/proc/self/fd`
    /// link), without the ` (deleted)` the kernel appends once the file has
    /// no name: for messages and matching, never for opening.
    /// Wraps `readlink(2)`.
    public func currentPath() -> String? {
        guard let path = ProcessesInside.readLink(procPath) else { return nil }
        let deleted = " (deleted)"
        return path.hasSuffix(deleted) ? String(path.dropLast(deleted.count)) : path
    }
}
