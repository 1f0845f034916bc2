import PurgeCore
import PurgeSys

/// `user.purgefs.cloud` (the root: the network as the tier sees it), and a
/// file's `ubiquitous`, `uploaded`, `download_status`, `evictable`, `evict`
/// and `download`. Registered with `cloud=` only: without it, these names
/// answer `ENODATA` on read and `EINVAL` on write.
extension CloudTier: AttributeProvider {
    var attributes: [PurgeAttribute] { [.cloud, .ubiquitous, .uploaded, .downloadStatus, .evictable, .evict, .download] }

    func value(of attribute: PurgeAttribute, on inode: Inode) throws(Errno) -> String {
        switch attribute {
        case .cloud:
            return remote.isOffline ? "offline" : "online"
        case .ubiquitous:
            return isUbiquitous(inode) ? "1" : "0"
        case .uploaded:
            return try isUploaded(inode) ? "1" : "0"
        case .downloadStatus:
            return try downloadStatus(inode)
        case .evictable:
            return try evictability(inode)
        default:
            throw Errno.noData
        }
    }

    func set(_ attribute: PurgeAttribute, on inode: Inode, to value: AttributeValue) throws(Errno) {
        let text = value.text
        if attribute == .cloud { return try control(text) }
        guard text == "1" else { throw Errno.invalidArgument }
        switch attribute {
        case .evict: try evict(inode)
        case .download: try requestDownload(inode)
        default: throw Errno.invalidArgument
        }
    }
}
