/// A path pattern relative to the container, as fault rules match paths:
/// components separated by `/`; in a component `*` is any run of
/// characters, `?` one character, `[abc]`, `[a-z]` and `[!a-z]` (or `[^a-z]`)
/// one of a set, `\` takes the next character as it is; a component that is
/// exactly `**` matches any number of components, none included. The
/// container's root is the empty path: only `**` matches it.
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

    public init(parsing text: String) throws(FaultRuleError) {
        if text.isEmpty { throw FaultRuleError("--path: empty pattern (use '**' for every path)") }
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
        return Self.match(components[...], parts[...])
    }

    private static func match(_ pattern: ArraySlice<Component>, _ parts: ArraySlice<[Character]>) -> Bool {
        guard let first = pattern.first else { return parts.isEmpty }
        switch first {
        case .anyDepth:
            let rest = pattern.dropFirst()
            var remaining = parts
            while true {
                if match(rest, remaining) { return true }
                guard !remaining.isEmpty else { return false }
                remaining = remaining.dropFirst()
            }
        case .pattern(let pieces):
            guard let part = parts.first, match(pieces[...], part[...]) else { return false }
            return match(pattern.dropFirst(), parts.dropFirst())
        }
    }

    private static func match(_ pieces: ArraySlice<Piece>, _ name: ArraySlice<Character>) -> Bool {
        guard let piece = pieces.first else { return name.isEmpty }
        switch piece {
        case .anyRun:
            var remaining = name
            while true {
                if match(pieces.dropFirst(), remaining) { return true }
                guard !remaining.isEmpty else { return false }
                remaining = remaining.dropFirst()
            }
        case .oneCharacter:
            return !name.isEmpty && match(pieces.dropFirst(), name.dropFirst())
        case .literal(let character):
            return name.first == character && match(pieces.dropFirst(), name.dropFirst())
        case .set(let negated, let ranges):
            guard let character = name.first else { return false }
            return ranges.contains { $0.contains(character) } != negated && match(pieces.dropFirst(), name.dropFirst())
        }
    }
}
