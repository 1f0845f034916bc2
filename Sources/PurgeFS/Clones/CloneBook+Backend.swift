import Glibc
import PurgeCore
import PurgeSys

/// Reflinks as the mount's clone backend: a name is always its backing
/// file, and the backend hears only what changes its charges.
extension CloneBook: BackingFileNames {
    var kind: CloneBackendKind { .reflink }
    var makesClones: Bool { true }

    /// `FICLONE`; one the backing filesystem refuses (`EXDEV`, `EOPNOTSUPP`) is a copy.
    func clone(_ source: OpenFile, into destination: OpenFile, making: CloneMaking) -> Bool {
        do {
            try clone(source.descriptor, source.inode.key, into: destination.descriptor, destination.inode.key)
            return true
        } catch {
            return false
        }
    }

    /// Copy-on-write moves whole blocks: the write's length rounded to
    /// blocks, plus one for a range not aligned to them, at most what is shared.
    func bytesCopiedOnWrite(of id: EntryID, length: Int) -> UInt64 {
        let shared = sharedBytes(of: id)
        guard shared > 0, length > 0 else { return 0 }
        return min((UInt64(length) + 4095) / 4096 * 4096 + 4096, shared)
    }

    func charges(_ id: EntryID) -> Bool { contains(id) }

    func purged(_ id: EntryID) { _ = changed(id) }

    func settleAtMount(root: FileDescriptor) { settleAll() }

    // MARK: Events

    func removed(_ status: stat, id: EntryID, name: CName, from parent: EntryID) {
        guard status.st_mode & S_IFMT == S_IFREG else { return }
        forgetIfGone(id)
    }

    func closed(_ id: EntryID) { forgetIfGone(id) }

    func openAbandoned(_ id: EntryID) { forgetIfGone(id) }

    /// A member is charged with its group; any other file's figures are
    /// recorded as they are.
    func resized(_ status: stat, id: EntryID) {
        guard status.st_mode & S_IFMT == S_IFREG else { return }
        if !changed(id) { state.noteResized(status, id: id) }
    }
}
