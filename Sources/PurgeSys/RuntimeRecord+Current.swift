import Glibc
import PurgeCore

/// Where the daemon serving a mount wrote its runtime record: the user's own
/// runtime directory first, then root's (a mount served by root).
extension RuntimeRecord {
    /// What looking for a mount's record found.
    public enum Lookup: Sendable {
        case found(RuntimeRecord)
        /// A record file that does not parse.
        case unreadable(path: String)
        /// No record in any of these directories.
        case missing(directories: [String])
        /// A runtime directory that is not safe to read (`PrivateDirectory`): the line that says why.
        case refused(String)
    }

    /// The largest record read back.
    static let recordLimit = 1 << 16

    /// The record of the mount with the kernel's `mountID`.
    public static func lookup(mountID: Int) -> Lookup {
        let own = ownDirectoryPath
        let roots = directory(user: 0, runtimeDirectory: nil)
        let directories = own == roots ? [own] : [own, roots]
        for path in directories {
            let folder: FileDescriptor
            do {
                folder = try PrivateDirectory.open(path: path, mode: path == roots ? 0o755 : 0o700, create: false,
                                                   owner: path == roots ? 0 : CurrentProcess.effectiveUserID)
            } catch {
                if error.isMissing { continue }
                return .refused("runtime directory \(error)")
            }
            defer { folder.closeQuietly() }
            let name = fileName(mountID: mountID)
            guard let data = try? folder.readRegularFile(name, limit: recordLimit) else { continue }
            guard let record = RuntimeRecord(decoding: data) else { return .unreadable(path: path + "/" + name) }
            return .found(record)
        }
        return .missing(directories: directories)
    }

    /// This user's runtime directory's path (`directory(user:runtimeDirectory:)`).
    public static var ownDirectoryPath: String {
        directory(user: CurrentProcess.effectiveUserID, runtimeDirectory: CurrentProcess.environmentValue("XDG_RUNTIME_DIR"))
    }

    /// Opens this user's runtime directory, checked as `PrivateDirectory`
    /// checks (made first, if `create`): `0700`, the user's own; root's
    /// `/run/purgefs` is `0755`, so that other users find the records of
    /// the mounts root serves (each record is `0600`).
    public static func openOwnDirectory(create: Bool) throws(PrivateDirectory.Refusal) -> (path: String, descriptor: FileDescriptor) {
        let path = ownDirectoryPath
        let mode: mode_t = CurrentProcess.effectiveUserID == 0 ? 0o755 : 0o700
        return (path, try PrivateDirectory.open(path: path, mode: mode, create: create))
    }
}
