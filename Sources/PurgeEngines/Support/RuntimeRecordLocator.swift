import PurgeCore
import PurgeSys

/// Finds the runtime record of the daemon serving a mount: the user's own
/// runtime directory first, then root's (a mount served by root).
public enum RuntimeRecordLocator {
    /// The daemon writes its record just after the mount appears in the
    /// table: a command run at that moment waits for it this long.
    static let patience = 2_000

    public static func record(of mount: MountTable.Entry, at path: String) throws(CommandExit) -> RuntimeRecord {
        var waited = 0
        while true {
            do {
                return try find(mount, at: path)
            } catch {
                guard waited < patience, case .failure = error, MountTable.isStillMounted(mount) else { throw error }
                CurrentProcess.sleep(milliseconds: 20)
                waited += 20
            }
        }
    }

    private static func find(_ mount: MountTable.Entry, at path: String) throws(CommandExit) -> RuntimeRecord {
        switch RuntimeRecord.lookup(mountID: mount.id) {
        case .found(let record):
            return record
        case .unreadable(let recordPath):
            throw .failure("the runtime record \(recordPath) of the mount at \(path) is unreadable")
        case .refused(let line):
            throw .failure(line)
        case .missing(let directories):
            throw CommandExit.failure("no runtime record of the mount at \(path) in \(directories.joined(separator: " or ")) "
                + "(was it mounted by an older purgefs? remount it)")
        }
    }
}

extension MountTable {
    /// Whether the mount is still in the kernel's table.
    static func isStillMounted(_ mount: Entry) -> Bool {
        (try? MountTable.current())?.contains(id: mount.id) ?? false
    }
}
