import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// An inode's side of clone sharing (`Inode.sharing`): the files open on
/// it, how many of them hold writable descriptors, whether its data is
/// shared with other files (then none does: writers are *protected*, see
/// `OpenFile+Protection`), the modifications of its data under way, and a
/// linked clone's hold on its identity. Used by the clone backend
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
        var writers = 0
        var shared = false
        /// Modifications of the data under way (`beginModifying`).
        var modifying = 0
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
    /// (not while the inode's data is shared), counting it as a writer then.
    func admit(_ file: OpenFile, writing: Bool) -> Bool {
        // The open files are returned, so that a last reference dropped
        // meanwhile is released (and its deinit, which takes this lock, run)
        // after the lock, never under it.
        let (admitted, open) = files.withLock { state -> (Bool, [OpenFile]) in
            let open = state.files.compactMap(\.file)
            state.files = open.map { WeakOpenFile(file: $0) } + [WeakOpenFile(file: file)]
            guard writing, !state.shared else { return (false, open) }
            state.writers += 1
            return (true, open)
        }
        withExtendedLifetime(open) {}
        return admitted
    }

    /// A writer that held a writable descriptor is done with it.
    func dismissWriter() {
        files.withLock { $0.writers -= 1 }
    }

    /// A protected file may now hold a writable descriptor: counts it as a
    /// writer, unless the data is shared again.
    func admitWriter() -> Bool {
        files.withLock { state in
            guard !state.shared else { return false }
            state.writers += 1
            return true
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
        let open = files.withLock { $0.files.compactMap(\.file) }
        return open.filter { $0.isWritable && !$0.isProtected }
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
        !file.isProtected && beginModifying()
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
