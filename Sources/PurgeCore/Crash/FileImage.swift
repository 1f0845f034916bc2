/// A regular file's content as a crash state holds it: the bytes of a file
/// of the base copy (`origin`, its first `originLength` bytes), overlaid in
/// order by recorded writes (`pieces`, each a range of the operation log's
/// data file), at size `size` (what lies past the end of both reads as
/// zeros). Equal images have equal bytes, so a state builder can keep a
/// file it built before.
public struct FileImage: Hashable, Sendable {
    /// `length` bytes at `offset` of the file come from `data` in the data file.
    public struct Piece: Hashable, Sendable {
        public var offset: UInt64
        public var length: UInt64
        public var data: UInt64
        public var end: UInt64 { offset + length }

        public init(offset: UInt64, length: UInt64, data: UInt64) {
            self.offset = offset
            self.length = length
            self.data = data
        }
    }

    /// The base copy's file, relative to the container.
    public private(set) var origin: String?
    public private(set) var originLength: UInt64
    /// Applied in order: a later piece wins where they overlap.
    public private(set) var pieces: [Piece]
    public private(set) var size: UInt64

    /// An empty file (made by the run, never synced).
    public static let empty = FileImage(origin: nil, originLength: 0, pieces: [], size: 0)

    public init(origin: String?, originLength: UInt64, pieces: [Piece] = [], size: UInt64) {
        self.origin = origin
        self.originLength = originLength
        self.pieces = pieces
        self.size = size
    }

    /// The file of the base copy at `path`, `size` bytes long.
    public static func base(_ path: String, size: UInt64) -> FileImage {
        FileImage(origin: path, originLength: size, size: size)
    }

    /// A write of `piece`: the file grows to its end if shorter.
    public mutating func write(_ piece: Piece) {
        guard piece.length > 0 else { return }
        pieces.append(piece)
        size = max(size, piece.end)
    }

    /// The size becomes `newSize`: what lay past it is gone (zeros if it grows again).
    public mutating func resize(to newSize: UInt64) {
        if newSize < size {
            originLength = min(originLength, newSize)
            pieces = pieces.compactMap { piece in
                guard piece.offset < newSize else { return nil }
                var cut = piece
                cut.length = min(piece.length, newSize - piece.offset)
                return cut
            }
        }
        size = newSize
    }

    /// `piece` split where it crosses a `page`-aligned boundary of the file.
    public static func pages(of piece: Piece, page: UInt64 = 4096) -> [Piece] {
        var result: [Piece] = []
        var offset = piece.offset
        while offset < piece.end {
            // The next page boundary, which for the last page is past 2^64.
            let (boundary, overflow) = (offset / page + 1).multipliedReportingOverflow(by: page)
            let next = overflow ? piece.end : min(piece.end, boundary)
            result.append(Piece(offset: offset, length: next - offset, data: piece.data + (offset - piece.offset)))
            offset = next
        }
        return result
    }
}
