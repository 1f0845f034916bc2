import PurgeCore
import PurgeSys

/// A file's `content_id`, `shared`, `flat` and `flatten`, and the root's
/// `not_flat`: what the clone backend knows of the data it shares, for a
/// file the ledger holds (`ENODATA` otherwise).
struct CloneAttributes: AttributeProvider {
    let state: ContainerState
    let clones: any CloneBackend
    /// What a flatten needs to break a clone, as a first write does: room,
    /// the namespace locks, the inode table (never the filesystem).
    let breaking: CloneBreaking

    var attributes: [PurgeAttribute] { [.contentID, .shared, .flat, .notFlat, .flatten] }

    func value(of attribute: PurgeAttribute, on inode: Inode) throws(Errno) -> String {
        if attribute == .notFlat { return String(clones.filesNotFlat) }
        let id = inode.key
        _ = try state.fileInfo(id)
        switch attribute {
        case .contentID: return String(clones.contentID(of: id))
        case .shared: return String(clones.sharedBytes(of: id))
        case .flat: return clones.sharesData(id) ? "0" : "1"
        default: throw Errno.noData
        }
    }

    /// `flatten`: `1` only; a flat file is left as it is.
    func set(_ attribute: PurgeAttribute, on inode: Inode, to value: AttributeValue) throws(Errno) {
        guard attribute == .flatten, value.text == "1" else { throw Errno.invalidArgument }
        _ = try state.fileInfo(inode.key)
        try clones.flatten(inode, breaking: breaking)
    }
}
