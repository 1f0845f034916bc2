@testable import PurgeCore
import XCTest

final class FaultRuleTests: XCTestCase {
    private func rule(_ line: String) throws -> FaultRule {
        try FaultRule(arguments: FaultRuleFile.words(of: Substring(line)))
    }

    /// Found by the parser fuzzing (ParserFuzzTests.testFaultRulesFile): a rules file with
    /// CRLF line ends was one line ("\r\n" is one Character), its words ending in "\r\n".
    func testARulesFileWithCRLFLineEnds() throws {
        let rules = try FaultRuleFile.parse("--op read --path a --errno EIO --seed 7\r\n--op write --path b --short-write\r\n")
        XCTAssertEqual(rules.map(\.line), ["--op read --path a --errno EIO --seed 7", "--op write --path b --short-write"])
    }

    /// Found by the parser fuzzing (ParserFuzzTests.testFaultRule): a --path or --comm with a
    /// line break was accepted, but a rule travels as one line (fault add, the listing that
    /// fault list reads), so its listing was unreadable until the rules were cleared.
    func testAValueWithALineBreakIsRefused() {
        for arguments in [["--op", "read", "--path", "a\nb", "--errno", "EIO"], ["--op", "read", "--path", "a", "--errno", "EIO", "--comm", "x\r\n"]] {
            XCTAssertThrowsError(try FaultRule(arguments: arguments)) {
                XCTAssertTrue("\($0)".hasSuffix(": a value cannot hold a line break"), "\($0)")
            }
        }
    }

    /// Found by libFuzzer (scripts/fuzz values, fault-rule): a delay was read through Double,
    /// so 2.110s was 2,109,999,999 ns and printed as 2109999.999us, which read back one less
    /// again; a quote followed by a combining mark was one Character, so a --path that starts
    /// with one, written as a rules-file line, did not read back.
    func testDelaysAreExactAndQuotedWordsReadBackWhateverFollowsTheQuote() throws {
        XCTAssertEqual(try FaultAction.delay(parsing: "2.110s"), 2_110_000_000)
        XCTAssertEqual(FaultAction.durationText(2_109_999_999), "2109999.999us")
        XCTAssertEqual(try FaultAction.delay(parsing: "2109999.999us"), 2_109_999_999)
        XCTAssertEqual(FaultAction.durationText(1_500), "1.5us")
        let rule = try FaultRule(arguments: ["--op", "lookup", "--path", "\u{650}x'\u{301}.db", "--errno", "EIO"])
        XCTAssertEqual(try FaultRuleFile.parse(rule.line), [rule], rule.line)
    }

    func testEveryFlagParsesAndComesBackCanonical() throws {
        let parsed = try rule("--path 'Documents/*.db' --op write --errno eio --after 3 --times 1 --probability 0.25 --comm sqlite3 --seed 9")
        XCTAssertEqual(parsed.operation, .write)
        XCTAssertEqual(parsed.path.text, "Documents/*.db")
        XCTAssertEqual(parsed.action, .fail("EIO"))
        XCTAssertEqual(parsed.after, 3)
        XCTAssertEqual(parsed.times, 1)
        XCTAssertEqual(parsed.probability, 0.25)
        XCTAssertEqual(parsed.process, .command("sqlite3"))
        XCTAssertEqual(parsed.seed, 9)
        XCTAssertEqual(parsed.line,
                       "--op write --path 'Documents/*.db' --errno EIO --probability 0.25 --after 3 --times 1 --comm sqlite3 --seed 9")
        XCTAssertEqual(try rule(parsed.line), parsed, "the canonical line reads back as the same rule")
    }

    func testActions() throws {
        XCTAssertEqual(try rule("--op fsync --path '**' --delay 250ms").action, .delay(nanoseconds: 250_000_000))
        XCTAssertEqual(try rule("--op read --path a --delay 1.5s").action, .delay(nanoseconds: 1_500_000_000))
        XCTAssertEqual(try rule("--op read --path a --delay 2m").action, .delay(nanoseconds: 120_000_000_000))
        XCTAssertEqual(try rule("--op read --path a --delay 500us").action, .delay(nanoseconds: 500_000))
        XCTAssertEqual(try rule("--op write --path a --short-write").action, .shortWrite)
        XCTAssertEqual(try rule("--op read --path a --delay 1.5s").line, "--op read --path a --delay 1500ms")
        XCTAssertEqual(try rule("--op any --path a --pid 42 --errno ENOSPC").process, .pid(42))
    }

    func testBadInputIsOneClearLine() {
        let cases: [(String, String)] = [
            ("--op wirte --path a --errno EIO", "unknown operation 'wirte'"),
            ("--op write --path a --errno EWHAT", "unknown errno name"),
            ("--op write --path 'a[' --errno EIO", "without its"),
            ("--op write --path a --errno EIO --probability 1.5", "--probability '1.5'"),
            ("--op write --path a --errno EIO --probability -0.1", "--probability"),
            ("--op write --path a --errno EIO --probability nan", "--probability"),
            ("--op write --path a --delay 10", "--delay '10': not a duration"),
            ("--op write --path a --delay 0ms", "above zero"),
            ("--op write --path a --delay 2h", "not a duration"),
            ("--op write --path a --delay 61m", "at most 1 hour"),
            ("--op write --path a --errno EIO --after -1", "--after '-1'"),
            ("--op write --path a --errno EIO --after x", "--after 'x'"),
            ("--op write --path a --errno EIO --times 0", "--times '0'"),
            ("--op write --path a --errno EIO --seed -3", "--seed"),
            ("--op write --path a --errno EIO --pid 0", "--pid"),
            ("--op write --path a --errno EIO --comm averyveryverylongname", "--comm"),
            ("--op write --path a --errno EIO --pid 3 --comm x", "not both"),
            ("--op write --path a", "give one action"),
            ("--op write --path a --errno EIO --short-write", "one action only"),
            ("--op read --path a --short-write", "writes only"),
            ("--path a --errno EIO", "--op is required"),
            ("--op read --errno EIO", "--path is required"),
            ("--op read --path a --errno EIO --what", "unknown flag --what"),
            ("--op read --path a --errno", "--errno needs a value"),
            ("--op read --op write --path a --errno EIO", "--op given twice"),
        ]
        for (line, words) in cases {
            XCTAssertThrowsError(try rule(line), line) { error in
                let message = (error as? FaultRuleError)?.message ?? "\(error)"
                XCTAssertTrue(message.contains(words), "\(line) → \(message)")
                XCTAssertFalse(message.contains("\n"), message)
            }
        }
    }

    func testRulesFileNamesTheLine() throws {
        let text = """
            # rules for the app
            --op write --path "Documents/My Files/*.db" --errno EIO   # the database

            --op read --path 'caches/**' --delay 100ms --probability 0.5
            """
        let rules = try FaultRuleFile.parse(text)
        XCTAssertEqual(rules.count, 2)
        XCTAssertEqual(rules[0].path.text, "Documents/My Files/*.db")
        XCTAssertEqual(rules[1].probability, 0.5)
        XCTAssertThrowsError(try FaultRuleFile.parse(text + "\n--op read --path x --errno ENOPE")) { error in
            XCTAssertTrue((error as? FaultRuleError)?.message.hasPrefix("line 5: --errno 'ENOPE'") ?? false, "\(error)")
        }
        XCTAssertThrowsError(try FaultRuleFile.parse("--op read --path 'x --errno EIO")) { error in
            XCTAssertEqual((error as? FaultRuleError)?.message, "line 1: a ' without its closing '")
        }
    }

    func testQuotingRoundTrips() throws {
        for word in ["plain", "with space", "it's", "*.db", "", "a\"b", "x\\y"] {
            XCTAssertEqual(try FaultRuleFile.words(of: Substring(FaultRuleFile.quoted(word))), [word], word)
        }
    }
}
