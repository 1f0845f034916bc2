import Glibc
import PurgeCore

/// The cloud tier's model (`PurgeCore.CloudManifest`) from what `stat`
/// says of a local file or of its remote copy.
extension CloudSignature {
    init(_ status: stat) {
        self.init(
            inode: UInt64(status.st_ino), size: UInt64(status.st_size),
            modified: UInt64(status.st_mtim.tv_sec) * 1_000_000_000 + UInt64(status.st_mtim.tv_nsec))
    }
}

extension CloudRecord {
    /// `remote`: the remote copy as it is now.
    init(signature: CloudSignature, evicted: Bool, remote: stat) {
        self.init(signature: signature, evicted: evicted, remoteVersion: CloudSignature(remote))
    }

    mutating func setRemote(_ status: stat) { setRemote(CloudSignature(status)) }

    /// Whether `status` (the remote copy now) is another version than the recorded one.
    func isNewer(_ status: stat) -> Bool { isNewer(CloudSignature(status)) }
}
