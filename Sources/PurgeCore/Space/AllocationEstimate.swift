/// What a change to a file's data may allocate, and so the room it asks
/// for before it runs (SPEC "Space").
///
/// A hole allocates nothing: growing a file with `truncate`, or writing far
/// past its end, makes a hole, as on any POSIX filesystem, so only the
/// blocks that will hold data are asked for. Counted in whole blocks of
/// `blockSize`: a range that starts or ends inside a block may allocate it.
///
/// Pure arithmetic; whether a range inside the file covers a hole is a
/// question for the backing file (`SEEK_HOLE`), passed in as `holeWithin`
/// and asked only when the ledger's figures say the file may have holes.
public enum AllocationEstimate {
    /// The allocation unit assumed (ext4's, XFS's and btrfs's default).
    public static let blockSize: UInt64 = 4096

    /// Bytes that data written over `offset ..< offset + length` of a file
    /// of `size` bytes, `allocated` of them on disk, may allocate:
    ///
    /// - past the end of file, the blocks the range covers beyond the file's
    ///   last block (not the hole between the end of file and `offset`);
    /// - inside the file, the blocks the range covers, but only when the
    ///   file may have holes (`allocated` below its size in blocks) and
    ///   `holeWithin` finds one in that part of the range; data over data
    ///   allocates nothing.
    ///
    /// Used for `write`, `copy_file_range` into the file, and the
    /// `fallocate` modes that reserve blocks (plain, `KEEP_SIZE`,
    /// `ZERO_RANGE`); `truncate` allocates nothing.
    public static func write(
        offset: UInt64, length: UInt64, size: UInt64, allocated: UInt64,
        holeWithin: (Range<UInt64>) -> Bool
    ) -> UInt64 {
        guard length > 0 else { return 0 }
        let (end, overflow) = offset.addingReportingOverflow(length)
        let last = overflow ? UInt64.max : end
        var need: UInt64 = 0
        if last > size {
            // Blocks past the file's last one that the range reaches.
            let firstNew = max(offset / blockSize, blocks(size))
            let lastNew = blocks(last)
            if lastNew > firstNew { need = (lastNew - firstNew).multipliedClamped(by: blockSize) }
        }
        if offset < size && allocated < blocks(size).multipliedClamped(by: blockSize) {
            let inside = offset ..< min(last, size)
            if holeWithin(inside) {
                let spanned = (blocks(inside.upperBound) - inside.lowerBound / blockSize).multipliedClamped(by: blockSize)
                need = need.addingClamped(spanned)
            }
        }
        return need
    }

    /// Whole blocks needed to hold `size` bytes.
    static func blocks(_ size: UInt64) -> UInt64 {
        size / blockSize + (size % blockSize == 0 ? 0 : 1)
    }
}
