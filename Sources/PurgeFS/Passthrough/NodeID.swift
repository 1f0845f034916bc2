/// The number the kernel uses to name an inode of the mount. Handed out from
/// a counter, never reused within a session, never a pointer.
public struct NodeID: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    /// `FUSE_ROOT_ID`: the container's root directory.
    public static let root = NodeID(1)

    public var description: String { "node \(rawValue)" }
}
