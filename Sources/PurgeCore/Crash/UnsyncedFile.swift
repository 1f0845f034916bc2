/// A file written since its last sync, as the crash model keeps it: its size
/// at that sync and an undo record of the bytes of that version that were
/// overwritten or cut since, each saved once, before its first change.
///
/// Invariant: a byte below `syncedSize` that is not in `saved` still holds
/// what it held at the sync. So restoring is: write every saved range back,
/// then set the size to `syncedSize`.
public struct UnsyncedFile: Sendable, Equatable {
    /// A range of the synced version saved in the undo file at `undoOffset`.
    public struct SavedRange: Sendable, Equatable {
        public var offset: UInt64
        public var length: UInt64
        public var undoOffset: UInt64
        public var end: UInt64 { offset + length }
    }

    public let syncedSize: UInt64
    /// Sorted by offset, never overlapping.
    public private(set) var saved: [SavedRange] = []
    /// Bytes in the undo file so far (where the next range goes).
    public private(set) var undoLength: UInt64 = 0

    public init(syncedSize: UInt64) {
        self.syncedSize = syncedSize
    }

    /// The ranges `change` may alter that are not saved yet, each with the
    /// undo file's offset where it is to be saved. Records them as saved:
    /// the caller saves them before it lets the change happen (or calls
    /// `forget` on failure).
    public mutating func claim(_ change: DataChange) -> [SavedRange] {
        guard let range = change.affected(below: syncedSize) else { return [] }
        var missing: [Range<UInt64>] = []
        var cursor = range.lowerBound
        for piece in saved where piece.end > cursor && piece.offset < range.upperBound {
            if piece.offset > cursor { missing.append(cursor..<piece.offset) }
            cursor = max(cursor, piece.end)
        }
        if cursor < range.upperBound { missing.append(cursor..<range.upperBound) }
        var claimed: [SavedRange] = []
        for gap in missing {
            let piece = SavedRange(offset: gap.lowerBound, length: gap.upperBound - gap.lowerBound, undoOffset: undoLength)
            undoLength += piece.length
            claimed.append(piece)
        }
        saved.append(contentsOf: claimed)
        saved.sort { $0.offset < $1.offset }
        return claimed
    }

    /// Takes back ranges `claim` gave that could not be saved: the file
    /// can no longer be restored exactly, and says so.
    public mutating func forget(_ pieces: [SavedRange]) {
        let dropped = Set(pieces.map(\.offset))
        saved.removeAll { dropped.contains($0.offset) }
        lost = true
    }

    /// A range could not be saved: a crash restores what it has and reports
    /// the file as restored in part.
    public private(set) var lost = false
}
