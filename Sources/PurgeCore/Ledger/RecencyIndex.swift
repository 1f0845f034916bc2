/// The purge order: an indexed binary min-heap of items by last-use stamp.
///
/// Kept up to date as files change rather than scanned at purge time, so the
/// least recently used item is found in O(1), and inserting, removing or
/// re-stamping an item costs O(log n). Each item's heap position is stored
/// in a flat array indexed by the item's slot (4 bytes per slot, no hashing),
/// which keeps a million-entry index at about 20 bytes per candidate.
///
/// Items are small dense keys handed out by the ledger: a file slot, or a
/// group directory's slot (a group is purged as one item, aged by its most
/// recently used file). Ties between equal stamps are broken by the item's
/// raw value, so the order is total and deterministic.
public struct RecencyIndex: Sendable {
    /// A key in the index: a file or a group directory, by ledger slot.
    public struct Item: Hashable, Comparable, Sendable, CustomStringConvertible {
        public let rawValue: UInt32
        private static let groupBit: UInt32 = 1 << 31

        public static func file(_ slot: UInt32) -> Item {
            precondition(slot < groupBit, "purgefs: file slot \(slot) is out of range")
            return Item(rawValue: slot)
        }

        public static func group(_ slot: UInt32) -> Item {
            precondition(slot < groupBit, "purgefs: directory slot \(slot) is out of range")
            return Item(rawValue: slot | groupBit)
        }

        private init(rawValue: UInt32) { self.rawValue = rawValue }

        public var isGroup: Bool { rawValue & Item.groupBit != 0 }
        public var slot: UInt32 { rawValue & ~Item.groupBit }

        public static func < (lhs: Item, rhs: Item) -> Bool { lhs.rawValue < rhs.rawValue }
        public var description: String { isGroup ? "group \(slot)" : "file \(slot)" }
    }

    struct Entry: Sendable {
        var stamp: UInt64
        var item: Item

        @inline(__always)
        func precedes(_ other: Entry) -> Bool {
            stamp != other.stamp ? stamp < other.stamp : item.rawValue < other.item.rawValue
        }
    }

    private static let absent = UInt32.max

    private(set) var heap: [Entry] = []
    private var filePositions: [UInt32] = []
    private var groupPositions: [UInt32] = []
    /// Heap levels the last operation walked: lets tests check the O(log n)
    /// shape of the structure without timing anything.
    private(set) var lastSteps = 0

    public init() {}

    public var count: Int { heap.count }
    public var isEmpty: Bool { heap.isEmpty }

    public mutating func reserveCapacity(_ capacity: Int) {
        heap.reserveCapacity(capacity)
    }

    public func contains(_ item: Item) -> Bool { position(of: item) != nil }

    /// The item's stamp, if it is in the index.
    public func stamp(of item: Item) -> UInt64? {
        position(of: item).map { heap[Int($0)].stamp }
    }

    /// The least recently used item, in O(1).
    public var oldest: (item: Item, stamp: UInt64)? {
        heap.first.map { ($0.item, $0.stamp) }
    }

    public mutating func insert(_ item: Item, stamp: UInt64) {
        precondition(!contains(item), "purgefs: \(item) is already in the recency index")
        heap.append(Entry(stamp: stamp, item: item))
        setPosition(item, UInt32(heap.count - 1))
        siftUp(heap.count - 1)
    }

    /// Gives a present item a new stamp, later or earlier.
    public mutating func touch(_ item: Item, stamp: UInt64) {
        guard let position = position(of: item) else {
            preconditionFailure("purgefs: \(item) is not in the recency index")
        }
        let index = Int(position)
        let old = heap[index].stamp
        heap[index].stamp = stamp
        if stamp < old { siftUp(index) } else { siftDown(index) }
    }

    public mutating func remove(_ item: Item) {
        guard let position = position(of: item) else {
            preconditionFailure("purgefs: \(item) is not in the recency index")
        }
        removeEntry(at: Int(position))
    }

    @discardableResult
    public mutating func popOldest() -> (item: Item, stamp: UInt64)? {
        guard let first = heap.first else { return nil }
        removeEntry(at: 0)
        return (first.item, first.stamp)
    }

    // MARK: Heap mechanics

    private mutating func removeEntry(at index: Int) {
        let removed = heap[index].item
        let last = heap.removeLast()
        setPosition(removed, RecencyIndex.absent)
        guard index < heap.count else {
            lastSteps = 0
            return
        }
        heap[index] = last
        setPosition(last.item, UInt32(index))
        if index > 0 && last.precedes(heap[(index - 1) / 2]) { siftUp(index) } else { siftDown(index) }
    }

    private mutating func siftUp(_ start: Int) {
        var index = start
        let moving = heap[index]
        var steps = 0
        while index > 0 {
            let parent = (index - 1) / 2
            guard moving.precedes(heap[parent]) else { break }
            heap[index] = heap[parent]
            setPosition(heap[index].item, UInt32(index))
            index = parent
            steps += 1
        }
        heap[index] = moving
        setPosition(moving.item, UInt32(index))
        lastSteps = steps
    }

    private mutating func siftDown(_ start: Int) {
        var index = start
        let moving = heap[index]
        let count = heap.count
        var steps = 0
        while true {
            let left = 2 * index + 1
            guard left < count else { break }
            let right = left + 1
            let child = right < count && heap[right].precedes(heap[left]) ? right : left
            guard heap[child].precedes(moving) else { break }
            heap[index] = heap[child]
            setPosition(heap[index].item, UInt32(index))
            index = child
            steps += 1
        }
        heap[index] = moving
        setPosition(moving.item, UInt32(index))
        lastSteps = steps
    }

    private func position(of item: Item) -> UInt32? {
        let slot = Int(item.slot)
        let position: UInt32
        if item.isGroup {
            guard slot < groupPositions.count else { return nil }
            position = groupPositions[slot]
        } else {
            guard slot < filePositions.count else { return nil }
            position = filePositions[slot]
        }
        return position == RecencyIndex.absent ? nil : position
    }

    private mutating func setPosition(_ item: Item, _ position: UInt32) {
        let slot = Int(item.slot)
        if item.isGroup {
            if slot >= groupPositions.count { RecencyIndex.grow(&groupPositions, toHold: slot) }
            groupPositions[slot] = position
        } else {
            if slot >= filePositions.count { RecencyIndex.grow(&filePositions, toHold: slot) }
            filePositions[slot] = position
        }
    }

    /// Doubles a position table as needed, so slots handed out one by one
    /// cost amortised O(1).
    private static func grow(_ table: inout [UInt32], toHold slot: Int) {
        let size = Swift.max(slot + 1, table.count * 2, 16)
        table.append(contentsOf: repeatElement(RecencyIndex.absent, count: size - table.count))
    }

    /// Whether every parent precedes its children and every stored position
    /// points back at its entry. For invariant checks; O(n).
    func isConsistent() -> Bool {
        for index in heap.indices {
            if index > 0 && heap[index].precedes(heap[(index - 1) / 2]) { return false }
            if position(of: heap[index].item) != UInt32(index) { return false }
        }
        let present = filePositions.lazy.filter { $0 != RecencyIndex.absent }.count
            + groupPositions.lazy.filter { $0 != RecencyIndex.absent }.count
        return present == heap.count
    }
}
