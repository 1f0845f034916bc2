import Glibc
import PurgeCore

/// A sparse member's base stamp (`PurgeCore.BaseStamp`) from what `stat`
/// says of the base: its size and modification time, as the cloud tier's
/// `CloudSignature` tells a document changed behind its back.
extension BaseStamp {
    init(_ status: stat) {
        self.init(
            size: UInt64(max(status.st_size, 0)), modifiedSeconds: Int64(status.st_mtim.tv_sec),
            modifiedNanoseconds: UInt32(clamping: status.st_mtim.tv_nsec))
    }
}
