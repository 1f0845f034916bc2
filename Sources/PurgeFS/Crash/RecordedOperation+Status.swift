import Glibc
import PurgeCore

extension RecordedOperation.EntryKind {
    /// The kind of the entry `status` describes, as the log names it: what
    /// `OperationRecorder` writes for an entry made and `OperationLog.tree(of:)`
    /// reads for one that was there.
    init(_ status: stat) {
        switch status.st_mode & S_IFMT {
        case S_IFREG: self = .file
        case S_IFDIR: self = .directory
        case S_IFLNK: self = .symbolicLink
        default: self = .other
        }
    }
}
