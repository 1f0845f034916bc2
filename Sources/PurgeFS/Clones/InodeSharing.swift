import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// An inode's side of clone sharing (`Inode.sharing`): the files open on
/// it, how many of them hold writable descriptors, whether its data is
/// shared with other files (then none does: writers are *protected*, see
/// `OpenFile+Protection`), which open files are protected and which count
/// as writers (by `FileHandleID`: `OpenFile` carries none of it), the
/// modifications of its data under way, and a linked clone's hold on its
/// identity. Used by the clone backend
/// (`LinkedClones`) and by the modification bracket
/// (`ContainerFileSystem.modifying`); the passthrough knows nothing else of it.
final class InodeSharing: Sendable {
    private let files = Mutex<OpenFiles>(OpenFiles())
    /// For a node whose backing file is another inode (a linked clone): a
    /// descriptor of the inode whose number is its key (the clone's anchor),
    /// kept open while the node lives, so the number cannot be reused by a
    /// new file while the kernel still knows this node by it.
    private let identityHold = Mutex<Int32>(-1)
    /// Where `share` waits for the modifications under way to end.
    private let modificationsEnded = ThreadSignal()

    private struct OpenFiles {
        var files: [WeakOpenFile] = []
        var shared = false
        /// Modifications of the data under way (`beginModifying`).
        var modifying = 0
        /// Open files opened for writing that hold a read-only stand-in.
        var protected: Set<FileHandleID> = []
        /// Open files holding writable descriptors (counted as writers).
        var counted: Set<FileHandleID> = []
    }

    private struct WeakOpenFile {
        weak var file: OpenFile?
    }

    deinit {
        let held = identityHold.withLock { $0 }
        if held >= 0 { FileDescriptor(rawValue: held).closeQuietly() }
    }

    /// Keeps `descriptor` (taken over) open while the node lives: see `identityHold`.
    func holdIdentity(_ descriptor: FileDescriptor) {
        let kept = identityHold.withLock { held -> Bool in
            guard held < 0 else { return false }
            held = descriptor.rawValue
            return true
        }
        if !kept { descriptor.closeQuietly() }
    }

    /// The held identity (see `identityHold`) opened anew with `flags`; nil
    /// when the node holds none.
    func reopenHeldIdentity(flags: Int32) throws(Errno) -> FileDescriptor? {
        // The hold is closed only by `deinit`, so it stays valid while the caller has this object.
        let held = identityHold.withLock { $0 }
        guard held >= 0 else { return nil }
        return try FileDescriptor(rawValue: held).reopen(flags: flags)
    }

    /// Registers `file`; returns whether it may hold a writable descriptor
    /// (not while the inode's data is shared), counting it as a writer then;
    /// a file opened for writing that may not is protected.
    @discardableResult
    func admit(_ file: OpenFile, writing: Bool) -> Bool {
        // The open files are returned, so that a last reference dropped
        // meanwhile is released (and its deinit, which takes this lock, run)
        // after the lock, never under it.
        let (admitted, open) = files.withLock { state -> (Bool, [OpenFile]) in
            let open = state.files.compactMap(\.file)
            state.files = open.map { WeakOpenFile(file: $0) } + [WeakOpenFile(file: file)]
            guard writing else { return (false, open) }
            guard !state.shared else {
                state.protected.insert(file.handle)
                return (false, open)
            }
            state.counted.insert(file.handle)
            return (true, open)
        }
        withExtendedLifetime(open) {}
        return admitted
    }

    /// The open file `handle` is released: a writer no more, protected no more.
    func released(_ handle: FileHandleID) {
        files.withLock { state in
            state.protected.remove(handle)
            state.counted.remove(handle)
        }
    }

    /// Whether the open file `handle` holds a read-only stand-in for its writable descriptor.
    func isProtected(_ handle: FileHandleID) -> Bool {
        files.withLock { $0.protected.contains(handle) }
    }

    /// Whether a change through the open file `handle` must break the clone
    /// first: the data is shared, or the file holds a read-only stand-in.
    /// One look under the lock, for every write (`beforeModify`).
    func mustBreak(before handle: FileHandleID) -> Bool {
        files.withLock { $0.shared || $0.protected.contains(handle) }
    }

    /// The open file `handle` now holds a new descriptor: a read-only
    /// stand-in for a writable one (`protecting`; it counts as a writer no
    /// more), or what it was opened for.
    func repointed(_ handle: FileHandleID, protecting: Bool) {
        files.withLock { state in
            // A protected file is no writer.
            if protecting {
                state.counted.remove(handle)
                state.protected.insert(handle)
            } else {
                state.protected.remove(handle)
            }
        }
    }

    /// A protected file may now hold a writable descriptor: counts it as a
    /// writer, unless the data is shared again or it is not protected.
    func admitWriter(_ handle: FileHandleID) -> Bool {
        files.withLock { state in
            guard state.protected.contains(handle), !state.shared else { return false }
            state.counted.insert(handle)
            return true
        }
    }

    /// A writer admitted by `admitWriter` could not get its writable descriptor.
    func dismissWriter(_ handle: FileHandleID) {
        files.withLock { state in
            state.counted.remove(handle)
        }
    }

    /// Marks the data shared, once modifications under way are done, and
    /// returns the files holding writable descriptors, for the caller to
    /// re-point at read-only ones (`OpenFile.repoint(protecting:)`, which
    /// stops counting them as writers). Modifications that begin from now on
    /// find the data shared and break it first. The wait is bounded: a
    /// modification is one write, truncate or allocation on the backing
    /// file, which needs nothing this caller holds (room is made before it);
    /// the caller sleeps until the last one ends (`endModifying` wakes it).
    func share() -> [OpenFile] {
        files.withLock { $0.shared = true }
        modificationsEnded.wait { files.withLock { $0.modifying == 0 } }
        // Filtered after the lock: see `admit`.
        let (open, protected) = files.withLock { ($0.files.compactMap(\.file), $0.protected) }
        return open.filter { $0.isWritable && !protected.contains($0.handle) }
    }

    /// Brackets a change of the data through a writable descriptor (a
    /// write, truncate, allocation): false while the data is shared, when
    /// the caller must break the clone first.
    func beginModifying() -> Bool {
        files.withLock { state in
            guard !state.shared else { return false }
            state.modifying += 1
            return true
        }
    }

    /// `beginModifying` through the open `file`: false too while the file
    /// holds a read-only stand-in (protected).
    func beginModifying(through file: OpenFile) -> Bool {
        files.withLock { state in
            guard !state.protected.contains(file.handle), !state.shared else { return false }
            state.modifying += 1
            return true
        }
    }

    func endModifying() {
        // Only `share` waits, and only once the data is marked shared.
        let last = files.withLock { state in
            state.modifying -= 1
            return state.shared && state.modifying == 0
        }
        if last { modificationsEnded.wake() }
    }

    func unshare() {
        files.withLock { $0.shared = false }
    }

    var isShared: Bool { files.withLock { $0.shared } }

    /// Files open on this inode now.
    var openFiles: [OpenFile] { files.withLock { $0.files.compactMap(\.file) } }
}
