import PurgeCore
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
}
