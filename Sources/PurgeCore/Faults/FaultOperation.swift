/// What a fault rule matches: an operation on the mount, by the name of the
/// system call or FUSE request it stands for.
///
/// A request may answer to more than one name: an `fdatasync` is also an
/// `fsync` (SQLite on Linux syncs with `fdatasync`, and a rule written for
/// `fsync` should see it), a `setattr` that changes the size is also a
/// `truncate`, and `readdirplus` is a `readdir`. `any` matches every request
/// the injector sees.
///
/// The cloud tier's calls to its remote have operations of their own
/// (`isCloud`): `upload`, `download`, `remote-delete` (a remote delete, and
/// a remote rename, which removes the old name) and `remote-list` (listing
/// the remote, and reading a document's remote status). `any` does not
/// match them: they are no requests to the mount.
public enum FaultOperation: String, CaseIterable, Sendable {
    case any
    case lookup, getattr, setattr, truncate, readlink
    case mknod, mkdir, symlink, link, unlink, rmdir, rename
    case open, create, read, write, flush, fsync, fdatasync, fallocate, lseek
    case copyFileRange = "copy_file_range"
    case opendir, readdir, fsyncdir
    case getxattr, setxattr, listxattr, removexattr
    case statfs, access
    case upload, download
    case remoteDelete = "remote-delete"
    case remoteList = "remote-list"

    /// A call of the cloud tier to its remote, not a request to the mount.
    public var isCloud: Bool {
        switch self {
        case .upload, .download, .remoteDelete, .remoteList: return true
        default: return false
        }
    }

    /// The names in the order the reference lists them.
    public static var names: String {
        allCases.map(\.rawValue).joined(separator: ", ")
    }

    public static func parse(_ text: String) throws(FaultRuleError) -> FaultOperation {
        guard let operation = FaultOperation(rawValue: text) else {
            throw FaultRuleError("unknown operation '\(text)' (one of: \(names))")
        }
        return operation
    }
}

/// The operations one request answers to (see `FaultOperation`): one, or
/// two where a narrower name is also a wider one.
public struct FaultCallOperations: Equatable, Sendable {
    public let primary: FaultOperation
    public let also: FaultOperation?

    public init(_ primary: FaultOperation, also: FaultOperation? = nil) {
        self.primary = primary
        self.also = also
    }

    /// Whether a rule written for `operation` matches.
    public func match(_ operation: FaultOperation) -> Bool {
        (operation == .any && !primary.isCloud) || operation == primary || operation == also
    }
}
