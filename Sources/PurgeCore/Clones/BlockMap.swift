/// Which blocks of a sparse member are its own and which it still shares
/// with its base (docs/DESIGN.md, "Block sharing without reflinks").
///
/// Blocks are `blockSize` bytes. Below `sharedLength` (a multiple of the
/// block size) a block is *own* when it is in `own`, else *shared*: it reads
/// from the base, the immutable backing inode the member was cloned from.
/// Every block at or beyond `sharedLength` is own (the anchor's holes there
/// read as zeros). The map knows nothing of the member's size: that is its
/// anchor's.
public struct BlockMap: Equatable, Sendable {
    /// 64 KiB: the cluster size qcow2 and dm-thin default to.
    public static let blockSize: UInt64 = 1 << 16

    public var base: EntryID
    /// The base as it was when the map last trusted it (nil: a map
    /// journaled before stamps, stamped at the next mount's replay).
    public var baseStamp: BaseStamp?
    public private(set) var sharedLength: UInt64
    /// Own blocks below `sharedLength`.
    public private(set) var own: BlockRanges

    /// A map sharing everything below `sharedLength` rounded down to a block.
    public init(base: EntryID, sharedLength: UInt64, baseStamp: BaseStamp? = nil) {
        self.base = base
        self.baseStamp = baseStamp
        self.sharedLength = Self.blockStart(sharedLength)
        self.own = BlockRanges()
    }

    public static func block(of offset: UInt64) -> UInt64 { offset / blockSize }
    public static func blockStart(_ offset: UInt64) -> UInt64 { offset / blockSize * blockSize }
    /// The blocks bytes [offset, offset + length) touch.
    public static func blocks(offset: UInt64, length: UInt64) -> Range<UInt64> {
        guard length > 0 else { return block(of: offset)..<block(of: offset) }
        return block(of: offset)..<(block(of: offset + length - 1) + 1)
    }

    public var sharedBlocks: UInt64 { sharedLength / Self.blockSize }
    /// Blocks still read from the base.
    public var sharedBlockCount: UInt64 { sharedBlocks - own.count }
    /// Shared blocks, as ranges.
    public var shared: [Range<UInt64>] { own.gaps(in: 0..<sharedBlocks) }
    /// Nothing is shared any more.
    public var sharesNothing: Bool { sharedBlockCount == 0 }

    public func isOwn(_ block: UInt64) -> Bool { block >= sharedBlocks || own.contains(block) }

    /// One piece of a byte range: where its bytes are read from.
    public struct Piece: Equatable, Sendable {
        public let offset: UInt64
        public let length: UInt64
        public let shared: Bool
        public init(offset: UInt64, length: UInt64, shared: Bool) {
            self.offset = offset
            self.length = length
            self.shared = shared
        }
    }

    /// Bytes [offset, offset + length) split into runs read from the anchor
    /// (own) or the base (shared), in order, adjacent runs of one kind merged.
    public func pieces(offset: UInt64, length: UInt64) -> [Piece] {
        guard length > 0 else { return [] }
        let end = offset + length
        guard offset < sharedLength else { return [Piece(offset: offset, length: length, shared: false)] }
        var pieces: [Piece] = []
        func add(_ start: UInt64, _ stop: UInt64, shared: Bool) {
            guard stop > start else { return }
            if let last = pieces.last, last.shared == shared, last.offset + last.length == start {
                pieces[pieces.count - 1] = Piece(offset: last.offset, length: stop - last.offset, shared: shared)
            } else {
                pieces.append(Piece(offset: start, length: stop - start, shared: shared))
            }
        }
        let sharedEnd = min(end, sharedLength)
        var cursor = offset
        for gap in own.gaps(in: Self.blocks(offset: offset, length: sharedEnd - offset)) {
            let start = max(offset, gap.lowerBound * Self.blockSize)
            let stop = min(sharedEnd, gap.upperBound * Self.blockSize)
            add(cursor, start, shared: false)
            add(start, stop, shared: true)
            cursor = stop
        }
        add(cursor, end, shared: false)
        return pieces
    }

    /// The shared blocks a write of [offset, offset + length) touches: each
    /// must be copied into the anchor (the write laid over it) before it is
    /// marked own. A punch is a write of zeros below `sharedLength` (so an
    /// own block there always holds data) and a punch of the anchor past it.
    public func sharedBlocks(offset: UInt64, length: UInt64) -> [Range<UInt64>] {
        guard length > 0, offset < sharedLength else { return [] }
        let touched = Self.blocks(offset: offset, length: min(offset + length, sharedLength) - offset)
        return own.gaps(in: touched)
    }

    /// Marks `blocks` own (their data now in the anchor). Returns the
    /// blocks that were shared and are own now, clamped to `sharedLength`.
    @discardableResult
    public mutating func makeOwn(_ blocks: Range<UInt64>) -> [Range<UInt64>] {
        let inside = blocks.clamped(to: 0..<sharedBlocks)
        let newlyOwn = own.gaps(in: inside)
        own.insert(inside)
        return newlyOwn
    }

    /// The block a truncate to `size` must copy first: the shared block
    /// `size` falls inside of (its bytes below `size` stay, and after the
    /// truncate it lies past `sharedLength`, where blocks are own).
    public func blockToCopy(truncatingTo size: UInt64) -> UInt64? {
        guard size < sharedLength, size % Self.blockSize != 0 else { return nil }
        let block = Self.block(of: size)
        return own.contains(block) ? nil : block
    }

    /// Lowers `sharedLength` to the block boundary at or below `size`
    /// (truncate down; a truncate up changes nothing). Returns whether it
    /// changed. Call `blockToCopy(truncatingTo:)` first.
    @discardableResult
    public mutating func truncate(to size: UInt64) -> Bool {
        lowerSharedLength(to: Self.blockStart(size))
    }

    /// `sharedLength` = `length` (a block boundary) if lower; own blocks
    /// past it are dropped (they are own anyway).
    @discardableResult
    public mutating func lowerSharedLength(to length: UInt64) -> Bool {
        let aligned = Self.blockStart(length)
        guard aligned < sharedLength else { return false }
        sharedLength = aligned
        own.remove(sharedBlocks..<UInt64.max)
        return true
    }
}
