/// A path pattern relative to the container, as fault rules match paths:
/// components separated by `/`; in a component `*` is any run of
/// characters, `?` one character, `[abc]`, `[a-z]` and `[!a-z]` (or `[^a-z]`)
/// one of a set, `\` takes the next character as it is; a component that is
/// exactly `**` matches any number of components, none included. The
/// container's root is the empty path: only `**` matches it.
///
/// Matching takes time proportional to the pattern's length times the
/// path's, whatever the pattern: `*` and `**` are matched by the two-pointer
/// walk that, on a mismatch, goes back only to the last star (a later star
/// can match anything an earlier one could), never by trying every split.
/// A pattern is at most `maximumLength` characters, so a rule checked on
/// every request costs little however it is written.
public struct FaultGlob: Equatable, Sendable, CustomStringConvertible {
    /// The pattern as given.
    public let text: String
    private let components: [Component]

    private enum Component: Equatable, Sendable {
        case anyDepth
        case pattern([Piece])
    }

    private enum Piece: Equatable, Sendable {
        case literal(Character)
        case oneCharacter
        case anyRun
        case set(negated: Bool, ranges: [ClosedRange<Character>])
    }

    /// The longest pattern a rule may have, in characters: a quarter of
    /// `PATH_MAX`, ample for a pattern and small enough that matching it
    /// against the longest path stays cheap.
    public static let maximumLength = 1024

    public init(parsing text: String) throws(FaultRuleError) {
        if text.isEmpty { throw FaultRuleError("--path: empty pattern (use '**' for every path)") }
        if text.count > Self.maximumLength {
            throw FaultRuleError("--path: a pattern of \(text.count) characters; at most \(Self.maximumLength)")
        }
        if text.hasPrefix("/") {
            throw FaultRuleError("--path '\(text)': a pattern is relative to the container (no leading '/')")
        }
        self.text = text
        var components: [Component] = []
        for part in text.split(separator: "/", omittingEmptySubsequences: false) {
            if part.isEmpty { throw FaultRuleError("--path '\(text)': empty component ('//' or a trailing '/')") }
            if part == "**" {
                if components.last != .anyDepth { components.append(.anyDepth) }
                continue
            }
            components.append(.pattern(try Self.pieces(of: part, in: text)))
        }
        self.components = components
    }

    public var description: String { text }

    private static func pieces(of part: Substring, in text: String) throws(FaultRuleError) -> [Piece] {
        var pieces: [Piece] = []
        var index = part.startIndex
        while index < part.endIndex {
            let character = part[index]
            index = part.index(after: index)
            switch character {
            case "\\":
                guard index < part.endIndex else { throw FaultRuleError("--path '\(text)': '\\' at the end escapes nothing") }
                pieces.append(.literal(part[index]))
                index = part.index(after: index)
            case "?":
                pieces.append(.oneCharacter)
            case "*":
                if index < part.endIndex, part[index] == "*" {
                    throw FaultRuleError("--path '\(text)': '**' must be a whole component (as in 'a/**/b')")
                }
                pieces.append(.anyRun)
            case "[":
                var negated = false
                if index < part.endIndex, part[index] == "!" || part[index] == "^" {
                    negated = true
                    index = part.index(after: index)
                }
                var ranges: [ClosedRange<Character>] = []
                var closed = false
                var first = true
                while index < part.endIndex {
                    var low = part[index]
                    index = part.index(after: index)
                    if low == "]" && !first { closed = true; break }
                    first = false
                    if low == "\\" {
                        guard index < part.endIndex else { break }
                        low = part[index]
                        index = part.index(after: index)
                    }
                    var high = low
                    let dash = index
                    if dash < part.endIndex, part[dash] == "-", part.index(after: dash) < part.endIndex,
                       part[part.index(after: dash)] != "]" {
                        high = part[part.index(after: dash)]
                        index = part.index(dash, offsetBy: 2)
                        guard low <= high else {
                            throw FaultRuleError("--path '\(text)': range '\(low)-\(high)' is backwards")
                        }
                    }
                    ranges.append(low...high)
                }
                guard closed else { throw FaultRuleError("--path '\(text)': '[' without its ']'") }
                pieces.append(.set(negated: negated, ranges: ranges))
            default:
                pieces.append(.literal(character))
            }
        }
        return pieces
    }

    /// Whether `path` (relative, components separated by `/`, the root
    /// empty) matches.
    public func matches(_ path: String) -> Bool {
        let parts = path.isEmpty ? [] : path.split(separator: "/", omittingEmptySubsequences: false).map { Array($0) }
        return Self.wildcardMatch(components, parts, isStar: { $0 == .anyDepth }) { component, part in
            guard case .pattern(let pieces) = component else { return false }
            return Self.wildcardMatch(pieces, part, isStar: { $0 == .anyRun }, matchesOne: Self.matches)
        }
    }

    private static func matches(_ piece: Piece, _ character: Character) -> Bool {
        switch piece {
        case .anyRun: return false  // a star is the walk's business, never one element's
        case .oneCharacter: return true
        case .literal(let literal): return literal == character
        case .set(let negated, let ranges): return ranges.contains { $0.contains(character) } != negated
        }
    }

    /// Whether `elements` match `pattern`, where a star matches any run of
    /// elements and every other token exactly one (`matchesOne`). The
    /// two-pointer walk: on a mismatch, go back to the last star seen and
    /// let it take one element more. Only the last star ever needs to grow:
    /// whatever an earlier star's longer match would let the rest match,
    /// the last star can match as well. O(pattern × elements) calls of
    /// `matchesOne`.
    static func wildcardMatch<Token, Element>(
        _ pattern: [Token], _ elements: [Element], isStar: (Token) -> Bool, matchesOne: (Token, Element) -> Bool
    ) -> Bool {
        var p = 0, e = 0
        var star: (token: Int, element: Int)?
        while e < elements.count {
            if p < pattern.count, isStar(pattern[p]) {
                star = (p, e)
                p += 1
            } else if p < pattern.count, matchesOne(pattern[p], elements[e]) {
                p += 1
                e += 1
            } else if let last = star {
                star = (last.token, last.element + 1)
                p = last.token + 1
                e = last.element + 1
            } else {
                return false
            }
        }
        while p < pattern.count, isStar(pattern[p]) { p += 1 }
        return p == pattern.count
    }
}
