/// Proves the block maps and the files agree (docs/DESIGN.md, "Block
/// sharing without reflinks"): every own block below `sharedLength` holds
/// data in its anchor, no shared block does (a copy no durable record
/// claims is referenced by nobody), `sharedLength` is within the anchor,
/// every map's base has its link in the state directory and every link is
/// named by a map. Pure: the I/O layer reads the anchors and links.
///
/// `replay` says what the mount does after reading the durable book: drop
/// maps whose anchor is gone or is still a linked member's, lower a
/// `sharedLength` past its anchor's size, punch shared blocks holding data,
/// unlink bases nobody names. After the repairs the check finds nothing
/// but what no repair can mend (an own block without data, a missing base).
public enum BlockShareCheck {
    /// What the I/O layer found of one anchor.
    public struct Anchor: Equatable, Sendable {
        public var size: UInt64
        /// Byte ranges holding data (`SEEK_DATA`/`SEEK_HOLE`), sorted and merged.
        public private(set) var data: [Range<UInt64>]

        public init(size: UInt64, data: [Range<UInt64>]) {
            self.size = size
            var merged: [Range<UInt64>] = []
            for range in data.sorted(by: { $0.lowerBound < $1.lowerBound }) where !range.isEmpty {
                if let last = merged.last, last.upperBound >= range.lowerBound {
                    merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
                } else {
                    merged.append(range)
                }
            }
            self.data = merged
        }

        /// Blocks holding any data.
        public var blocksWithData: BlockRanges {
            var blocks = BlockRanges()
            for range in data { blocks.insert(BlockMap.blocks(offset: range.lowerBound, length: UInt64(range.count))) }
            return blocks
        }

        /// Blocks that are data from start to end.
        public var wholeDataBlocks: BlockRanges {
            var blocks = BlockRanges()
            let size = BlockMap.blockSize
            for range in data {
                let first = (range.lowerBound + size - 1) / size, end = range.upperBound / size
                if first < end { blocks.insert(first..<end) }
            }
            return blocks
        }
    }

    public enum Finding: Equatable, Sendable, CustomStringConvertible {
        /// The member's anchor could not be read.
        case missingAnchor(member: EntryID)
        /// Blocks the map says are own hold no data: synced bytes lost.
        case ownBlocksWithoutData(member: EntryID, blocks: Range<UInt64>)
        /// Blocks the map says are shared hold data in the anchor: referenced by nobody.
        case sharedBlocksWithData(member: EntryID, blocks: Range<UInt64>)
        /// The anchor is shorter than what the map shares.
        case sharedPastSize(member: EntryID, sharedLength: UInt64, size: UInt64)
        /// The map's base has no link: its shared blocks cannot be read.
        case danglingBase(member: EntryID, base: EntryID)
        /// A base link no map names: its blocks are referenced by nobody.
        case unreferencedBase(base: EntryID)
        /// The base is not as the map stamped it (written behind the
        /// mount): the member's shared blocks fail with `EIO`.
        case baseChanged(member: EntryID, base: EntryID, stamped: BaseStamp, now: BaseStamp)

        public var description: String {
            switch self {
            case .missingAnchor(let member): "member \(member): anchor missing"
            case .ownBlocksWithoutData(let member, let blocks): "member \(member): own blocks \(blocks) hold no data"
            case .sharedBlocksWithData(let member, let blocks): "member \(member): shared blocks \(blocks) hold data nobody refers to"
            case .sharedPastSize(let member, let length, let size): "member \(member): shares \(length) bytes, anchor has \(size)"
            case .danglingBase(let member, let base): "member \(member): base \(base) has no link"
            case .unreferencedBase(let base): "base \(base): linked, referred to by no map"
            case .baseChanged(let member, let base, let stamped, let now):
                "member \(member): base \(base) changed behind the mount (stamped \(stamped), now \(now)): its shared blocks read EIO"
            }
        }
    }

    /// Everything that disagrees, members and bases in order. `baseStamps`
    /// are the bases' stamps now (those that could be read).
    public static func findings(
        maps: [EntryID: BlockMap], anchors: [EntryID: Anchor], baseLinks: Set<EntryID>, baseStamps: [EntryID: BaseStamp] = [:]
    ) -> [Finding] {
        var findings: [Finding] = []
        for member in maps.keys.sorted() {
            let map = maps[member]!
            if !baseLinks.contains(map.base) { findings.append(.danglingBase(member: member, base: map.base)) }
            if let stamped = map.baseStamp, let now = baseStamps[map.base], now != stamped {
                findings.append(.baseChanged(member: member, base: map.base, stamped: stamped, now: now))
            }
            guard let anchor = anchors[member] else {
                findings.append(.missingAnchor(member: member))
                continue
            }
            if map.sharedLength > anchor.size {
                findings.append(.sharedPastSize(member: member, sharedLength: map.sharedLength, size: anchor.size))
            }
            for blocks in map.own.subtracting(anchor.wholeDataBlocks).ranges {
                findings.append(.ownBlocksWithoutData(member: member, blocks: blocks))
            }
            for blocks in unclaimed(map, anchor) { findings.append(.sharedBlocksWithData(member: member, blocks: blocks)) }
        }
        let named = Set(maps.values.map(\.base))
        for base in baseLinks.sorted() where !named.contains(base) { findings.append(.unreferencedBase(base: base)) }
        return findings
    }

    /// Shared blocks of `map` holding data in `anchor`.
    static func unclaimed(_ map: BlockMap, _ anchor: Anchor) -> [Range<UInt64>] {
        anchor.blocksWithData.clamped(to: 0..<map.sharedBlocks).subtracting(map.own).ranges
    }

    /// What the mount does after reading the durable book, in this order:
    /// append `records` to the journal (synced), truncate the `emptied`
    /// anchors to nothing, punch `punches` (blocks), unlink the `unlinkBases`.
    public struct Repairs: Equatable, Sendable {
        public var records: [BlockMapRecord] = []
        public var emptied: [EntryID] = []
        public var punches: [EntryID: [Range<UInt64>]] = [:]
        public var unlinkBases: [EntryID] = []
        public var isEmpty: Bool { records.isEmpty && emptied.isEmpty && punches.isEmpty && unlinkBases.isEmpty }
    }

    /// The repairs of `book` (durable) given its anchors (nil: could not
    /// be reopened), the members the linked-clone registry still has (a
    /// first write killed before its rename), the base links present and
    /// the bases' stamps now. A map journaled before stamps is stamped
    /// with its base as it is now (nothing older is known to compare with);
    /// a stamp that differs is no repair's to mend: the check reports it,
    /// and the member's shared blocks fail with `EIO`.
    public static func replay(
        book: BlockMapBook, anchors: [EntryID: Anchor], linkedMembers: Set<EntryID>, baseLinks: Set<EntryID>,
        baseStamps: [EntryID: BaseStamp] = [:]
    ) -> Repairs {
        var repairs = Repairs()
        var named = Set<EntryID>()
        for member in book.durable.keys.sorted() {
            var map = book.durable[member]!.map
            if linkedMembers.contains(member) {
                repairs.records.append(.drop(member: member))
                repairs.emptied.append(member)
                continue
            }
            guard let anchor = anchors[member] else {
                repairs.records.append(.drop(member: member))
                continue
            }
            if map.sharedLength > anchor.size, map.lowerSharedLength(to: anchor.size) {
                repairs.records.append(.sharedLength(member: member, length: map.sharedLength))
            }
            let punches = unclaimed(map, anchor)
            if !punches.isEmpty { repairs.punches[member] = punches }
            if map.baseStamp == nil, let now = baseStamps[map.base] { repairs.records.append(.stamp(member: member, stamp: now)) }
            named.insert(map.base)
        }
        repairs.unlinkBases = baseLinks.subtracting(named).sorted()
        return repairs
    }
}
