import PurgeCore
import PurgeSys

/// A file's `content_id` and `shared`: what the clone backend knows of the
/// data it shares, for a file the ledger holds (`ENODATA` otherwise).
struct CloneAttributes: AttributeProvider {
    let state: ContainerState
    let clones: any CloneBackend

    var attributes: [PurgeAttribute] { [.contentID, .shared] }

    func value(of attribute: PurgeAttribute, on inode: Inode) throws(Errno) -> String {
        let id = inode.key
        _ = try state.fileInfo(id)
        switch attribute {
        case .contentID: return String(clones.contentID(of: id))
        case .shared: return String(clones.sharedBytes(of: id))
        default: throw Errno.noData
        }
    }
}
