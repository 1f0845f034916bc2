/// A union of half-open byte ranges, kept sorted and merged.
public struct ExtentSet: Equatable, Sendable {
    /// Sorted, disjoint, non-adjacent (start, end) pairs.
    private(set) var ranges: [(start: UInt64, end: UInt64)] = []

    public init() {}

    public init(_ extents: [FileExtent]) {
        for extent in extents where !extent.isUnmapped { insert(extent.physical, length: extent.length) }
    }

    public var byteCount: UInt64 { ranges.reduce(0) { $0 + ($1.end - $1.start) } }

    /// Adds a range; returns how many of its bytes were not in the set yet.
    @discardableResult
    public mutating func insert(_ start: UInt64, length: UInt64) -> UInt64 {
        guard length > 0 else { return 0 }
        var newStart = start, newEnd = start + length
        let covered = overlap(start, newEnd)
        // Merge every range touching [newStart, newEnd).
        var kept: [(start: UInt64, end: UInt64)] = []
        kept.reserveCapacity(ranges.count + 1)
        var placed = false
        for range in ranges {
            if range.end < newStart {
                kept.append(range)
            } else if range.start > newEnd {
                if !placed { kept.append((newStart, newEnd)); placed = true }
                kept.append(range)
            } else {
                newStart = min(newStart, range.start)
                newEnd = max(newEnd, range.end)
            }
        }
        if !placed { kept.append((newStart, newEnd)) }
        ranges = kept
        return length - covered
    }

    /// Bytes of [start, end) already in the set.
    public func overlap(_ start: UInt64, _ end: UInt64) -> UInt64 {
        var total: UInt64 = 0
        for range in ranges where range.end > start && range.start < end {
            total += min(end, range.end) - max(start, range.start)
        }
        return total
    }

    public static func == (a: ExtentSet, b: ExtentSet) -> Bool {
        a.ranges.elementsEqual(b.ranges) { $0.start == $1.start && $0.end == $1.end }
    }
}
