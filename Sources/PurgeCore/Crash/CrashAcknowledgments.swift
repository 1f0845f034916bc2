/// Where a recorded command acknowledged something: each line of its
/// stdout, placed after the operations it made before printing it (the
/// recorder logs what the command printed before each operation it logs,
/// so a line printed before operation k + 1 began belongs to point k), and
/// what `purgefs explore --golden` makes of a crash state's view.
///
/// The views compared are those of the container as the command saw it
/// (`CrashExploration.forEachLiveState`) at the reference points: 0 (before the
/// first operation), each point a line was printed at, and the end. A crash
/// state at k, by which m lines had been printed, passes when its view
/// equals the view at the point of line m (0 when m = 0) or at a later
/// reference point: what was acknowledged is there, and nothing half-made.
public struct CrashAcknowledgments: Sendable, Equatable {
    /// Line `number` (from 1), whose last byte is byte `end` - 1 of the
    /// output, was printed after operation `point` and before `point` + 1.
    public struct Line: Sendable, Equatable {
        public var number: Int
        public var point: Int
        public var end: UInt64
    }

    public let lines: [Line]
    public let operationCount: Int
    /// Output printed by each point k = 0...n (at n, all of it).
    let printed: [UInt64]

    /// `outputLength(k)`: bytes printed before operation k + 1 began, for k
    /// = 0..<`operationCount`; at `operationCount` the whole `output` counts
    /// (what was printed after the last operation). A last line without
    /// its newline is a line.
    public init(output: [UInt8], operationCount: Int, outputLength: (Int) -> UInt64) {
        self.operationCount = operationCount
        var printed = (0..<operationCount).map { min(outputLength($0), UInt64(output.count)) }
        printed.append(UInt64(output.count))
        for index in printed.indices.dropFirst() { printed[index] = max(printed[index], printed[index - 1]) }
        self.printed = printed
        var lines: [Line] = []
        var point = 0
        for (index, byte) in output.enumerated() where byte == UInt8(ascii: "\n") || index == output.count - 1 {
            let end = UInt64(index + 1)
            while printed[point] < end { point += 1 }
            lines.append(Line(number: lines.count + 1, point: point, end: end))
        }
        self.lines = lines
    }

    /// The acknowledgments of `exploration`'s run, whose stdout was `output`.
    public init(output: [UInt8], exploration: CrashExploration) {
        self.init(output: output, operationCount: exploration.operationCount, outputLength: exploration.outputLength(at:))
    }

    /// Bytes printed by point k (all of them at the last).
    public func outputLength(at point: Int) -> UInt64 {
        printed[min(max(point, 0), printed.count - 1)]
    }

    /// The points whose views states are compared with, ascending, each once.
    public var referencePoints: [Int] {
        var points = [0] + lines.map(\.point) + [operationCount]
        points = points.sorted()
        return points.enumerated().filter { $0.offset == 0 || points[$0.offset - 1] != $0.element }.map(\.element)
    }

    /// Lines printed whole within the first `outputLength` bytes.
    public func acknowledged(outputLength: UInt64) -> Int {
        var low = 0, high = lines.count
        while low < high {
            let middle = (low + high) / 2
            if lines[middle].end <= outputLength { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// Every line arrived after the last operation, two lines or more: as
    /// a block-buffered stdout (a pipe's default) gives them, all at exit.
    public var looksBlockBuffered: Bool {
        operationCount > 0 && lines.count >= 2 && lines.allSatisfy { $0.point == operationCount }
    }

    /// How a report names a reference point: `line N` (the last printed
    /// there), else `the start` or `the end`.
    public func name(of point: Int) -> String {
        if let line = lines.last(where: { $0.point == point }) { return "line \(line.number)" }
        return point == 0 ? "the start" : point == operationCount ? "the end" : "point \(point)"
    }

    public enum Verdict: Sendable, Equatable {
        case passed
        /// The view is one from before the last acknowledged point: an acknowledgment lost.
        case lostAcknowledgment(String)
        /// The view is no reference point's: something half-made or damaged.
        case noMatch(String)

        public var message: String? {
            switch self {
            case .passed: return nil
            case .lostAcknowledgment(let text), .noMatch(let text): return text
            }
        }
    }

    /// The verdict on a crash state whose output ran to `outputLength`
    /// and whose view equals the views at `matching` (reference points).
    public func verdict(matching: Set<Int>, outputLength: UInt64) -> Verdict {
        let count = acknowledged(outputLength: outputLength)
        let last = count == 0 ? 0 : lines[count - 1].point
        if matching.contains(where: { $0 >= last }) { return .passed }
        let lastName = count == 0 ? "none" : "line \(count)"
        guard let earlier = matching.max() else {
            return .noMatch("view matches no acknowledged point; last acknowledged: \(lastName)")
        }
        return .lostAcknowledgment("view matches \(name(of: earlier)), before the last acknowledged: \(lastName)")
    }
}
