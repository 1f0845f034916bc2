import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// Counts the inodes' descriptors against what the process may open, and
/// reopens evicted ones from their file handles.
///
/// The budget is half the open-files limit, and never more than what the
/// open files (one descriptor each: `Inode.lend`) and a reserve for
/// directory streams, libfuse's pipes and the rest leave (the data views'
/// idle files among the rest: block sharing keeps at most a sixteenth of
/// the limit, half the reserve). Past it,
/// `InodeTable` evicts the descriptors of the inodes used least recently,
/// and a file's last close gives up its inode's descriptor for a handle.
final class DescriptorPool: Sendable {
    /// Any descriptor on the backing filesystem, for `open_by_handle_at`.
    private let filesystem: FileDescriptor
    private let limit: Int
    private let open = Atomic<Int>(0)
    /// Files open now, each holding one descriptor.
    private let openFiles = Atomic<Int>(0)
    private let clock = Atomic<UInt64>(0)
    /// Whether handles can be reopened here (`CAP_DAC_READ_SEARCH`); learnt
    /// at the first eviction attempt.
    private let reopenWorks = Atomic<Bool>(true)

    init(filesystem: FileDescriptor, openFilesLimit: UInt64) {
        self.filesystem = filesystem
        self.limit = Int(min(openFilesLimit, 1 << 30))
    }

    /// How many inode descriptors may stay open: half the limit, less what
    /// open files and a reserve (an eighth of the limit, at least 64) need
    /// of the other half; at least 32.
    var budget: Int {
        let reserve = max(limit / 8, 64)
        return max(min(limit / 2, limit - reserve - openFiles.load(ordering: .relaxed)), 32)
    }

    func fileOpened() { openFiles.add(1, ordering: .relaxed) }
    func fileClosed() { openFiles.subtract(1, ordering: .relaxed) }

    func tick() -> UInt64 { clock.add(1, ordering: .relaxed).newValue }
    func opened() { open.add(1, ordering: .relaxed) }
    func closed() { open.subtract(1, ordering: .relaxed) }
    var count: Int { open.load(ordering: .relaxed) }
    var isOverBudget: Bool { count > budget && reopenWorks.load(ordering: .relaxed) }
    /// Whether one more inode descriptor would be past the budget.
    var isFull: Bool { count >= budget && reopenWorks.load(ordering: .relaxed) }

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
