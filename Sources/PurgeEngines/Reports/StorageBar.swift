/// A horizontal bar of fixed width, one run of a glyph per segment, each
/// run as long as its share of the total: the bar of Settings > Storage.
public struct StorageBar: Equatable {
    struct Segment: Equatable {
        var glyph: Character
        var label: String
        var bytes: UInt64
    }

    var segments: [Segment]
    var width: Int

    static let defaultWidth = 50

    /// The cells of each segment: proportional, rounded by largest
    /// remainder so they add up to `width` exactly; a segment of more than 0
    /// bytes gets at least one cell (taken from the largest), so a small one
    /// still shows. No cells at all when every segment is 0.
    static func cells(for amounts: [UInt64], width: Int) -> [Int] {
        let total = amounts.reduce(UInt128(0)) { $0 + UInt128($1) }
        guard total > 0, width > 0 else { return amounts.map { _ in 0 } }
        var cells = amounts.map { Int(UInt128($0) * UInt128(width) / total) }
        let remainders = amounts.map { UInt128($0) * UInt128(width) % total }
        var left = width - cells.reduce(0, +)
        for index in remainders.indices.sorted(by: { remainders[$0] > remainders[$1] }) where left > 0 {
            cells[index] += 1
            left -= 1
        }
        // Make every non-empty segment visible, if there is room for all of them.
        if amounts.filter({ $0 > 0 }).count <= width {
            for index in amounts.indices where amounts[index] > 0 && cells[index] == 0 {
                guard let donor = cells.indices.max(by: { cells[$0] < cells[$1] }), cells[donor] > 1 else { break }
                cells[donor] -= 1
                cells[index] = 1
            }
        }
        return cells
    }

    /// `[████▓▓▒···]`: `width` cells between brackets.
    var bar: String {
        let counts = Self.cells(for: segments.map(\.bytes), width: width)
        if counts.allSatisfy({ $0 == 0 }) { return "[" + String(repeating: " ", count: width) + "]" }
        return "[" + zip(segments, counts).map { String(repeating: $0.glyph, count: $1) }.joined() + "]"
    }

    /// `█ Documents  ▓ Caches & tmp  …`, wrapped to `lineWidth` columns.
    func legend(lineWidth: Int = TextLayout.width) -> [String] {
        var lines: [String] = []
        var line = ""
        for item in segments.map({ "\($0.glyph) \($0.label)" }) {
            if !line.isEmpty && line.count + 2 + item.count > lineWidth {
                lines.append(line)
                line = ""
            }
            line += line.isEmpty ? item : "  " + item
        }
        if !line.isEmpty { lines.append(line) }
        return lines
    }
}
