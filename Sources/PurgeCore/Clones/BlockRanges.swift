/// A set of block numbers kept as sorted, disjoint, non-adjacent half-open
/// ranges: a sparse member's own blocks, or the blocks of an anchor that
/// hold data. Sequential writes make one range, not one entry per block.
public struct BlockRanges: Equatable, Sendable {
    public private(set) var ranges: [Range<UInt64>] = []

    public init() {}

    public init(_ ranges: [Range<UInt64>]) {
        for range in ranges { insert(range) }
    }

    public var isEmpty: Bool { ranges.isEmpty }
    /// How many blocks the set holds.
    public var count: UInt64 { ranges.reduce(0) { $0 + UInt64($1.count) } }
    public var last: UInt64? { ranges.last.map { $0.upperBound - 1 } }

    /// The index of the first range whose end is past `block`.
    private func firstEnding(after block: UInt64) -> Int {
        var low = 0, high = ranges.count
        while low < high {
            let middle = (low + high) / 2
            if ranges[middle].upperBound <= block { low = middle + 1 } else { high = middle }
        }
        return low
    }

    public func contains(_ block: UInt64) -> Bool {
        let index = firstEnding(after: block)
        return index < ranges.count && ranges[index].lowerBound <= block
    }

    /// Adds `range`, merging what it touches.
    public mutating func insert(_ range: Range<UInt64>) {
        guard !range.isEmpty else { return }
        // Ranges ending before range.lowerBound (not adjacent) stay as they are.
        var first = firstEnding(after: range.lowerBound)
        if first > 0 && ranges[first - 1].upperBound == range.lowerBound { first -= 1 }
        var last = first
        var lower = range.lowerBound, upper = range.upperBound
        while last < ranges.count && ranges[last].lowerBound <= upper {
            lower = min(lower, ranges[last].lowerBound)
            upper = max(upper, ranges[last].upperBound)
            last += 1
        }
        ranges.replaceSubrange(first..<last, with: [lower..<upper])
    }

    /// Takes `range` out.
    public mutating func remove(_ range: Range<UInt64>) {
        guard !range.isEmpty else { return }
        var kept: [Range<UInt64>] = []
        kept.reserveCapacity(ranges.count + 1)
        for existing in ranges {
            if existing.upperBound <= range.lowerBound || existing.lowerBound >= range.upperBound {
                kept.append(existing)
                continue
            }
            if existing.lowerBound < range.lowerBound { kept.append(existing.lowerBound..<range.lowerBound) }
            if existing.upperBound > range.upperBound { kept.append(range.upperBound..<existing.upperBound) }
        }
        ranges = kept
    }

    /// The blocks of `self` that are not in `other`.
    public func subtracting(_ other: BlockRanges) -> BlockRanges {
        var result = self
        for range in other.ranges { result.remove(range) }
        return result
    }

    /// The blocks of `self` inside `range`.
    public func clamped(to range: Range<UInt64>) -> BlockRanges {
        var result = BlockRanges()
        for existing in ranges where existing.overlaps(range) {
            result.ranges.append(existing.clamped(to: range))
        }
        return result
    }

    /// The blocks of `range` that are not in the set, as ranges.
    public func gaps(in range: Range<UInt64>) -> [Range<UInt64>] {
        var gaps: [Range<UInt64>] = []
        var next = range.lowerBound
        for existing in ranges where existing.overlaps(range) {
            if existing.lowerBound > next { gaps.append(next..<existing.lowerBound) }
            next = max(next, existing.upperBound)
        }
        if next < range.upperBound { gaps.append(next..<range.upperBound) }
        return gaps
    }
}
