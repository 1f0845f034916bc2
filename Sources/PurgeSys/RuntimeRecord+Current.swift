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
    }

    /// The record of the mount with the kernel's `mountID`.
    public static func lookup(mountID: Int) -> Lookup {
        let own = directory(user: CurrentProcess.effectiveUserID,
                            runtimeDirectory: CurrentProcess.environmentValue("XDG_RUNTIME_DIR"))
        let roots = directory(user: 0, runtimeDirectory: nil)
        let directories = own == roots ? [own] : [own, roots]
        for directory in directories {
            let recordPath = directory + "/" + fileName(mountID: mountID)
            guard let data = try? FileDescriptor.readFile(recordPath, limit: 65536) else { continue }
            guard let record = RuntimeRecord(decoding: data) else { return .unreadable(path: recordPath) }
            return .found(record)
        }
        return .missing(directories: directories)
    }
}
