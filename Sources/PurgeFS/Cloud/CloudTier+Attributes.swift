import PurgeCore
import PurgeSys

/// `user.purgefs.ubiquitous`, `uploaded`, `download_status`, `evict` and `download`.
extension CloudTier {
    func value(of attribute: PurgeAttribute, on inode: Inode) throws(Errno) -> String {
        switch attribute {
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

    func set(_ attribute: PurgeAttribute, on inode: Inode, value: String) throws(Errno) {
        guard value == "1" else { throw Errno.invalidArgument }
        switch attribute {
        case .evict: try evict(inode)
        case .download: try requestDownload(inode)
        default: throw Errno.invalidArgument
        }
    }
}
