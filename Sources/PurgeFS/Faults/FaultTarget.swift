import CFuse
import PurgeCore
import PurgeSys

/// What a request is about, as its handler was given it: resolved to a path
/// only when a fault rule could match the request.
enum FaultTarget {
    /// A node: its own path.
    case node(fuse_ino_t)
    /// A name in a directory (lookup, create, mkdir, unlink, rename's source, link's new name, ...).
    case entry(fuse_ino_t, CName)
    /// An open file (read, write, fsync, ...).
    case file(UnsafeMutablePointer<fuse_file_info>)
    /// A node's extended attribute: requests for `user.purgefs.*` names are
    /// never faulted, so `purgefs fault clear` and the figures always get through.
    case attribute(fuse_ino_t, CName)
}

extension FaultCallOperations {
    /// A `setattr` that changes the size is a `truncate` too.
    static func setattr(_ fields: Int32) -> FaultCallOperations {
        fields & FUSE_SET_ATTR_SIZE != 0 ? .init(.truncate, also: .setattr) : .init(.setattr)
    }
}
