/// Where a run of a file's data lies on the backing device, in bytes, as
/// `FIEMAP` reports it. Clones are told apart by these physical ranges:
/// two files share data exactly where their extents overlap.
public struct FileExtent: Equatable, Sendable {
    public var physical: UInt64
    public var length: UInt64
    /// The device position is not known (delayed allocation, inline data):
    /// such bytes count as the file's own.
    public var isUnmapped: Bool

    public init(physical: UInt64, length: UInt64, isUnmapped: Bool = false) {
        self.physical = physical
        self.length = length
        self.isUnmapped = isUnmapped
    }
}
