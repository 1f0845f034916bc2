import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// Counts the inodes' descriptors against what the process may open, and
/// reopens evicted ones from their file handles.
///
/// The budget is a share of the open-files limit, leaving the rest for open
/// files, directory streams and libfuse. Past it, `InodeTable` evicts the
/// descriptors of the inodes used least recently.
final class DescriptorPool: Sendable {
    /// Any descriptor on the backing filesystem, for `open_by_handle_at`.
    private let filesystem: FileDescriptor
    let budget: Int
    private let open = Atomic<Int>(0)
    private let clock = Atomic<UInt64>(0)
    /// Whether handles can be reopened here (`CAP_DAC_READ_SEARCH`); learnt
    /// at the first eviction attempt.
    private let reopenWorks = Atomic<Bool>(true)

    init(filesystem: FileDescriptor, openFilesLimit: UInt64) {
        self.filesystem = filesystem
        // Half for inodes, never fewer than a few hundred.
        self.budget = max(Int(min(openFilesLimit, 1 << 30) / 2), 256)
    }

    func tick() -> UInt64 { clock.add(1, ordering: .relaxed).newValue }
    func opened() { open.add(1, ordering: .relaxed) }
    func closed() { open.subtract(1, ordering: .relaxed) }
    var count: Int { open.load(ordering: .relaxed) }
    var isOverBudget: Bool { count > budget && reopenWorks.load(ordering: .relaxed) }

    /// Reopens an evicted inode and checks it is still the same file.
    func reopen(_ handle: FileHandle, expecting key: EntryID) throws(Errno) -> FileDescriptor {
        let descriptor = try handle.open(on: filesystem, flags: OpenFlags.path | O_NOFOLLOW)
        guard let status = try? descriptor.status(), EntryID(status) == key else {
            descriptor.closeQuietly()
            throw Errno(ESTALE)
        }
        return descriptor
    }

    /// Checks once that this process may reopen handles: without
    /// `CAP_DAC_READ_SEARCH` nothing is ever evicted.
    func canReopen(sample: FileDescriptor) -> Bool {
        guard reopenWorks.load(ordering: .relaxed) else { return false }
        guard let handle = try? FileHandle(of: sample), let reopened = try? handle.open(on: filesystem, flags: OpenFlags.path)
        else {
            reopenWorks.store(false, ordering: .relaxed)
            Diagnostics.note("file handles cannot be reopened here: inode descriptors are never evicted")
            return false
        }
        reopened.closeQuietly()
        return true
    }
}
