/// Identity of a backing file or directory, as the adapter sees it: the
/// device and inode number of the backing store.
///
/// The core never interprets the numbers; it only needs an identity that is
/// the same for every hard link of a file, so that a file with several names
/// is one record counted once.
public struct EntryID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let device: UInt64
    public let inode: UInt64

    public init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }

    /// One word into the hasher instead of two: the ledger and the inode
    /// table hash identities on every change, a hot spot of the mount-time walk.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(inode ^ (device &* 0x9E37_79B9_7F4A_7C15))
    }

    public static func < (lhs: EntryID, rhs: EntryID) -> Bool {
        (lhs.device, lhs.inode) < (rhs.device, rhs.inode)
    }

    public var description: String { "\(device):\(inode)" }
}
