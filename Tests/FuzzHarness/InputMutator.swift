import PurgeCore

/// Makes hostile inputs from valid ones, as a fuzzer's mutator does: byte
/// flips, inserts, deletions, splices with another valid input, and the
/// shapes that break parsers most (numbers past 64 bits, long runs of `*`,
/// deep nesting, control bytes, invalid UTF-8). Seeded: the same seed makes
/// the same inputs, so a failure replays from the seed and the case number.
public struct InputMutator {
    private var random: SplitMix64
    private let corpus: [[UInt8]]

    public init(seed: UInt64, corpus: [[UInt8]]) {
        precondition(!corpus.isEmpty, "a mutator needs at least one valid input")
        random = SplitMix64(seed: seed)
        self.corpus = corpus
    }

    /// The next input: a corpus entry with one to four mutations stacked.
    public mutating func next() -> [UInt8] {
        var input = corpus[index(corpus.count)]
        for _ in 0...index(4) { mutate(&input) }
        return input
    }

    /// Words that parsers of this project give meaning to, spliced in whole.
    private static let tokens: [String] = [
        "18446744073709551615", "18446744073709551616", "340282366920938463463374607431768211457",
        "99999999999999999999999999999999", "0", "-1", "1.5", "0.000000000000000000000001", "1e308", "nan", "inf",
        "%", "100%", "1E", "16E", "T", "G", "K", "ms", "us", "h", "d", "**", "*", "?", "[", "]", "[!a-z]", "\\",
        "'", "\"", "#", ",", "=", ":", "/", "..", "\t", "\r\n", "\r\n\r\n", "\n", "\0", "%00", "%ZZ", "%0A",
        "{", "}", "[]", "{}", "null", "\\u0000", "\\uD800", "\\uDFFF\\uD800", "\u{FFFD}", "é", "😀",
    ]

    private mutating func mutate(_ input: inout [UInt8]) {
        switch index(11) {
        case 0: // flip a bit
            guard !input.isEmpty else { return input.append(UInt8(truncatingIfNeeded: random.next())) }
            input[index(input.count)] ^= UInt8(1) << UInt8(index(8))
        case 1: // insert a random byte
            input.insert(UInt8(truncatingIfNeeded: random.next()), at: index(input.count + 1))
        case 2: // delete a run
            guard !input.isEmpty else { return }
            let start = index(input.count)
            input.removeSubrange(start..<min(input.count, start + 1 + index(8)))
        case 3: // splice: a piece of another valid input in place of a piece of this one
            let other = corpus[index(corpus.count)]
            guard !other.isEmpty else { return }
            let from = index(other.count)
            let piece = other[from..<min(other.count, from + 1 + index(64))]
            let at = index(input.count + 1)
            input.replaceSubrange(at..<min(input.count, at + index(16)), with: piece)
        case 4: // a known token
            let token = Array(Self.tokens[index(Self.tokens.count)].utf8)
            input.insert(contentsOf: token, at: index(input.count + 1))
        case 5: // a number past what fits
            replaceDigits(&input, with: Array(Self.tokens[index(4)].utf8))
        case 6: // a long run of *
            input.insert(contentsOf: [UInt8](repeating: UInt8(ascii: "*"), count: 20 + index(200)), at: index(input.count + 1))
        case 7: // deep nesting: brackets, braces, path components, quotes
            let opener: [UInt8] = [[UInt8(ascii: "[")], [UInt8(ascii: "{")], Array("{\"a\":".utf8), Array("a/".utf8), Array("'".utf8)][index(5)]
            let depth = 50 + index(2000)
            var nested: [UInt8] = []
            nested.reserveCapacity(opener.count * depth)
            for _ in 0..<depth { nested += opener }
            input.insert(contentsOf: nested, at: index(input.count + 1))
        case 8: // a repeated piece (long lines, many items)
            guard !input.isEmpty else { return }
            let from = index(input.count)
            let piece = Array(input[from..<min(input.count, from + 1 + index(32))])
            var run: [UInt8] = []
            for _ in 0..<(2 + index(300)) { run += piece }
            input.insert(contentsOf: run, at: from)
        case 9: // an interesting byte in place of one
            guard !input.isEmpty else { return }
            input[index(input.count)] = [0, 0x0A, 0x0D, 0x20, 0x2C, 0x3D, 0x7F, 0x80, 0xC0, 0xFF, 0x25, 0x5C][index(12)]
        default: // truncate
            input.removeLast(index(input.count + 1))
        }
    }

    /// Replaces the first run of digits at or after a random place (or inserts one).
    private mutating func replaceDigits(_ input: inout [UInt8], with number: [UInt8]) {
        let isDigit = { (byte: UInt8) in byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        let start = index(input.count + 1)
        guard let first = input[start...].firstIndex(where: isDigit) ?? input.firstIndex(where: isDigit) else {
            input.insert(contentsOf: number, at: start)
            return
        }
        let end = input[first...].firstIndex { !isDigit($0) } ?? input.count
        input.replaceSubrange(first..<end, with: number)
    }

    /// A number in 0..<bound.
    private mutating func index(_ bound: Int) -> Int {
        Int(random.next() % UInt64(bound))
    }
}
