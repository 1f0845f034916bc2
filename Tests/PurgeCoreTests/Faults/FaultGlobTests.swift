import PurgeCore
import TestSupport
import XCTest

final class FaultGlobTests: XCTestCase {
    private func glob(_ text: String) throws -> FaultGlob { try FaultGlob(parsing: text) }

    func testStarAndQuestionStayInOneComponent() throws {
        XCTAssertTrue(try glob("Documents/*.db").matches("Documents/app.db"))
        XCTAssertFalse(try glob("Documents/*.db").matches("Documents/sub/app.db"))
        XCTAssertFalse(try glob("Documents/*.db").matches("Documents/app.db-journal"))
        XCTAssertTrue(try glob("Documents/*.db*").matches("Documents/app.db-journal"))
        XCTAssertTrue(try glob("a?c").matches("abc"))
        XCTAssertFalse(try glob("a?c").matches("a/c"))
        XCTAssertTrue(try glob("*").matches("a.txt"))
        XCTAssertFalse(try glob("*").matches(""), "the root is matched by ** only")
    }

    func testDoubleStarSpansDirectories() throws {
        let pattern = try glob("Documents/**/*.sqlite*")
        XCTAssertTrue(pattern.matches("Documents/x.sqlite"))
        XCTAssertTrue(pattern.matches("Documents/a/b/x.sqlite-wal"))
        XCTAssertFalse(pattern.matches("Library/x.sqlite"))
        XCTAssertTrue(try glob("**").matches(""))
        XCTAssertTrue(try glob("**").matches("a/b/c"))
        XCTAssertTrue(try glob("**/c").matches("c"))
        XCTAssertTrue(try glob("a/**").matches("a"))
    }

    func testSetsAndEscapes() throws {
        XCTAssertTrue(try glob("f[0-9]").matches("f7"))
        XCTAssertFalse(try glob("f[0-9]").matches("fx"))
        XCTAssertTrue(try glob("f[!0-9]").matches("fx"))
        XCTAssertTrue(try glob("f[^0-9]").matches("fx"))
        XCTAssertTrue(try glob("f[]]").matches("f]"))
        XCTAssertTrue(try glob("a\\*").matches("a*"))
        XCTAssertFalse(try glob("a\\*").matches("ab"))
    }

    func testMalformedPatternsAreOneLineEach() {
        for (text, words) in [("", "empty"), ("/abs", "relative"), ("a//b", "empty component"), ("a/", "empty component"),
                              ("f[ab", "without its"), ("a\\", "escapes nothing"), ("a**b", "whole component"),
                              ("[z-a]", "backwards")] {
            XCTAssertThrowsError(try FaultGlob(parsing: text), text) { error in
                let message = (error as? FaultRuleError)?.message ?? ""
                XCTAssertTrue(message.contains(words), "\(text): \(message)")
                XCTAssertFalse(message.contains("\n"))
            }
        }
    }

    // MARK: Adversarial patterns: matching never tries every split

    func testManyStarsAgainstALongNameFinish() throws {
        // 30 stars: a matcher that tries every split of the name never ends.
        let pattern = try glob(String(repeating: "*a", count: 30) + "b")
        let name = String(repeating: "a", count: 60)
        XCTAssertFalse(pattern.matches(name))
        XCTAssertTrue(pattern.matches(name + "b"))
        XCTAssertFalse(pattern.matches("Documents/" + name + "b"), "* stays in one component")
        XCTAssertTrue(try glob("**/" + pattern.text).matches("Documents/x/" + name + "b"))
    }

    func testManyDoubleStarsAgainstADeepPathFinish() throws {
        let pattern = try glob(Array(repeating: "**/a", count: 30).joined(separator: "/") + "/b")
        let path = Array(repeating: "a", count: 60).joined(separator: "/")
        XCTAssertFalse(pattern.matches(path))
        XCTAssertTrue(pattern.matches(path + "/b"))
    }

    func testTheLongestPatternAgainstTheLongestNameFinishes() throws {
        let pattern = try glob(String(repeating: "*a", count: FaultGlob.maximumLength / 2 - 1) + "b")
        XCTAssertFalse(pattern.matches(String(repeating: "a", count: 255)))
        XCTAssertFalse(pattern.matches(String(repeating: "a", count: 255) + "b"), "511 a's wanted, 255 given")
        XCTAssertTrue(try glob(String(repeating: "*a", count: 100) + "*b").matches(String(repeating: "a", count: 254) + "b"))
    }

    func testAPatternLongerThanTheBoundIsOneLine() throws {
        XCTAssertNoThrow(try glob(String(repeating: "a", count: FaultGlob.maximumLength)))
        let text = String(repeating: "*a", count: FaultGlob.maximumLength / 2) + "b"
        XCTAssertThrowsError(try glob(text)) { error in
            let message = (error as? FaultRuleError)?.message ?? ""
            XCTAssertTrue(message.contains("at most \(FaultGlob.maximumLength)"), message)
            XCTAssertFalse(message.contains("\n"))
            XCTAssertLessThan(message.count, 100, "the pattern is not echoed whole")
        }
        // The same bound for a rule, on the command line or in a rules file.
        XCTAssertThrowsError(try FaultRule(arguments: ["--op", "lookup", "--path", text, "--errno", "EIO"]))
        XCTAssertThrowsError(try FaultRuleFile.parse("--op lookup --path '\(text)' --errno EIO\n")) { error in
            XCTAssertTrue("\(error)".contains("line 1"), "\(error)")
        }
    }

    /// The matcher agrees with a plain backtracking one on small patterns
    /// and paths, drawn from a seeded generator.
    func testAgreesWithABacktrackingMatcherOnRandomInputs() throws {
        var generator = SeededGenerator(seed: 0x6106)
        for _ in 0..<20_000 {
            let pattern = Self.randomPattern(&generator)
            let path = Self.randomPath(&generator)
            let expected = Self.reference(pattern, path)
            XCTAssertEqual(try glob(pattern).matches(path), expected, "'\(pattern)' against '\(path)'")
        }
    }

    private static func randomPattern(_ generator: inout SeededGenerator) -> String {
        let tokens = ["a", "b", "?", "*", "[ab]", "[!a]", "[a-b]"]
        return (0..<Int.random(in: 1...3, using: &generator)).map { _ -> String in
            if Int.random(in: 0..<5, using: &generator) == 0 { return "**" }
            var component = ""
            for _ in 0..<Int.random(in: 1...5, using: &generator) {
                let token = tokens.randomElement(using: &generator)!
                if token == "*" && component.hasSuffix("*") { continue }  // '**' is a whole component only
                component += token
            }
            return component
        }.joined(separator: "/")
    }

    private static func randomPath(_ generator: inout SeededGenerator) -> String {
        (0..<Int.random(in: 0...3, using: &generator)).map { _ in
            String((0..<Int.random(in: 1...6, using: &generator)).map { _ in "abc".randomElement(using: &generator)! })
        }.joined(separator: "/")
    }

    /// The reference: the patterns `randomPattern` makes, matched by trying every split.
    private static func reference(_ pattern: String, _ path: String) -> Bool {
        let components = pattern.split(separator: "/").map { $0 == "**" ? nil : tokens(of: $0) }
        let parts = path.isEmpty ? [] : path.split(separator: "/").map(Array.init)
        func match(_ c: ArraySlice<[ReferenceToken]?>, _ p: ArraySlice<[Character]>) -> Bool {
            guard let first = c.first else { return p.isEmpty }
            guard let tokens = first else {
                return (0...p.count).contains { match(c.dropFirst(), p.dropFirst($0)) }
            }
            guard let part = p.first else { return false }
            return matchName(tokens[...], part[...]) && match(c.dropFirst(), p.dropFirst())
        }
        func matchName(_ t: ArraySlice<ReferenceToken>, _ n: ArraySlice<Character>) -> Bool {
            guard let first = t.first else { return n.isEmpty }
            switch first {
            case .star: return (0...n.count).contains { matchName(t.dropFirst(), n.dropFirst($0)) }
            case .one(let allowed): return n.first.map(allowed) == true && matchName(t.dropFirst(), n.dropFirst())
            }
        }
        return match(components[...], parts[...])
    }

    private enum ReferenceToken {
        case star
        case one((Character) -> Bool)
    }

    private static func tokens(of component: Substring) -> [ReferenceToken] {
        var tokens: [ReferenceToken] = []
        var rest = component
        while let character = rest.popFirst() {
            switch character {
            case "*": tokens.append(.star)
            case "?": tokens.append(.one { _ in true })
            case "[":
                let body = rest.prefix { $0 != "]" }
                rest = rest.dropFirst(body.count + 1)
                let negated = body.first == "!"
                let members: Set<Character> = body == "a-b" || body == "ab" ? ["a", "b"] : ["a"]
                tokens.append(.one { members.contains($0) != negated })
            default: tokens.append(.one { $0 == character })
            }
        }
        return tokens
    }
}
