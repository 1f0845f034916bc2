/// What a sparse member's base looked like when the member last trusted
/// it (docs/DESIGN.md, "Block sharing without reflinks", "The base
/// stamp"): its size and modification time, in nanoseconds. The base is
/// never written through the mount while a map names it, so a write to
/// it behind the mount (or a truncation) is what changes these two: every
/// `write(2)` and `truncate(2)` sets the modification time to the current
/// time. The change time is left out: renaming, linking, unlinking or
/// `chmod` of the original change it and not a byte of the data (purgefs
/// itself links and unlinks the base's name).
public struct BaseStamp: Equatable, Sendable, CustomStringConvertible {
    public var size: UInt64
    public var modifiedSeconds: Int64
    public var modifiedNanoseconds: UInt32

    public init(size: UInt64, modifiedSeconds: Int64, modifiedNanoseconds: UInt32) {
        self.size = size
        self.modifiedSeconds = modifiedSeconds
        self.modifiedNanoseconds = modifiedNanoseconds
    }

    public var description: String { "\(size) bytes, modified \(modifiedSeconds).\(modifiedNanoseconds)" }

    /// `SIZE SECONDS NANOSECONDS`, the fields of a record line.
    var fields: String { "\(size) \(modifiedSeconds) \(modifiedNanoseconds)" }
}
