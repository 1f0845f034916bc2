/// An amount of bytes, written the way tests think of it:
/// `.mebibytes(5)`. Units are powers of 1024, as everywhere in purgefs.
public struct ByteCount: Equatable, Hashable, Comparable, Sendable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    public var bytes: UInt64

    public init(bytes: UInt64) { self.bytes = bytes }
    public init(integerLiteral value: UInt64) { bytes = value }

    public static func bytes(_ count: UInt64) -> ByteCount { ByteCount(bytes: count) }
    public static func kibibytes(_ count: UInt64) -> ByteCount { ByteCount(bytes: count << 10) }
    public static func mebibytes(_ count: UInt64) -> ByteCount { ByteCount(bytes: count << 20) }
    public static func gibibytes(_ count: UInt64) -> ByteCount { ByteCount(bytes: count << 30) }

    public static func < (lhs: ByteCount, rhs: ByteCount) -> Bool { lhs.bytes < rhs.bytes }
    public static func + (lhs: ByteCount, rhs: ByteCount) -> ByteCount { ByteCount(bytes: lhs.bytes + rhs.bytes) }

    /// Plain bytes: what purgefs reads as a SIZE.
    public var description: String { String(bytes) }
}
