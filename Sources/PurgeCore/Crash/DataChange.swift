/// Where a change to a file's data lands, as the crash model needs to know
/// it before the change is made: which bytes of the file as it was at its
/// last sync the change may overwrite or cut, so they can be saved first.
public enum DataChange: Sendable, Equatable {
    /// `length` bytes at `offset` get new content (a write, `copy_file_range`
    /// into the file, a hole punched or zeroed).
    case overwrite(offset: UInt64, length: UInt64)
    /// The size becomes `size` (truncate, `O_TRUNC`): bytes past it are cut.
    case resize(to: UInt64)
    /// Everything from `offset` on may move (`fallocate` collapsing or
    /// inserting a range).
    case shift(from: UInt64)
    /// The size may grow, no content changes (`fallocate` that reserves).
    case allocate

    /// The bytes below `syncedSize` this change may alter.
    public func affected(below syncedSize: UInt64) -> Range<UInt64>? {
        let range: Range<UInt64>
        switch self {
        case .overwrite(let offset, let length):
            let end = offset.addingReportingOverflow(length)
            range = offset..<(end.overflow ? UInt64.max : end.partialValue)
        case .resize(let size): range = size..<UInt64.max
        case .shift(let offset): range = offset..<UInt64.max
        case .allocate: return nil
        }
        let clipped = range.clamped(to: 0..<syncedSize)
        return clipped.isEmpty ? nil : clipped
    }
}
