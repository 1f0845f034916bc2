import Glibc

/// A few 64-bit counters in a small file mapped shared (`MAP_SHARED`):
/// what one process stores there every process that maps the file reads at
/// once, without a call or a lock (on tmpfs the file is memory). Each
/// counter has one writer; an aligned 8-byte store or load is never torn.
public final class SharedCounters: Sendable {
    /// The mapping's address (an integer, so the type is plainly `Sendable`).
    private let address: UInt
    public let count: Int

    private init(address: UInt, count: Int) {
        self.address = address
        self.count = count
    }

    /// Maps `name` in `directory`: made `count` counters long (zeros) if
    /// `create` and shorter, else it must be that long already (`EINVAL`
    /// when not: a writer that has not sized it yet). Wraps `openat(2)`,
    /// `ftruncate(2)` and `mmap(2)`.
    public static func open(_ name: String, in directory: FileDescriptor, count: Int, create: Bool) throws(Errno) -> SharedCounters {
        let length = count * MemoryLayout<UInt64>.size
        let flags = (create ? O_RDWR | O_CREAT : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW
        let descriptor = Glibc.openat(directory.rawValue, name, flags, 0o600)
        guard descriptor >= 0 else { throw Errno(errno) }
        defer { _ = Glibc.close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw Errno(errno) }
        if status.st_size < length {
            guard create else { throw Errno.invalidArgument }
            guard ftruncate(descriptor, off_t(length)) == 0 else { throw Errno(errno) }
        }
        let protection = create ? PROT_READ | PROT_WRITE : PROT_READ
        let mapped = mmap(nil, length, protection, MAP_SHARED, descriptor, 0)
        guard let mapped, mapped != MAP_FAILED else { throw Errno(errno) }
        return SharedCounters(address: UInt(bitPattern: mapped), count: count)
    }

    private func slot(_ index: Int) -> UnsafeMutablePointer<UInt64> {
        precondition(index >= 0 && index < count, "shared counter \(index) of \(count)")
        return UnsafeMutablePointer<UInt64>(bitPattern: address)!.advanced(by: index)
    }

    /// Stores `value` in counter `index` (of a mapping opened with `create`).
    public func store(_ value: UInt64, at index: Int) { slot(index).pointee = value }

    public func load(at index: Int) -> UInt64 { slot(index).pointee }

    deinit {
        _ = munmap(UnsafeMutableRawPointer(bitPattern: address), count * MemoryLayout<UInt64>.size)
    }
}
