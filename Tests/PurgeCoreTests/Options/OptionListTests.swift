import XCTest
import PurgeCore

final class OptionListTests: XCTestCase {
    func testSplitsOnCommasAndDropsEmptyItems() {
        XCTAssertEqual(OptionList.split("a,b=1,,c"), ["a", "b=1", "c"])
        XCTAssertEqual(OptionList.split(""), [])
        XCTAssertEqual(OptionList.split(",,"), [])
    }

    func testBackslashEscapesLikeLibfuse() {
        XCTAssertEqual(OptionList.split(#"fsname=a\,b,ro"#), ["fsname=a,b", "ro"])
        XCTAssertEqual(OptionList.split(#"fsname=a\\b"#), [#"fsname=a\b"#])
        XCTAssertEqual(OptionList.split(#"fsname=a\054b"#), ["fsname=a,b"])
        XCTAssertEqual(OptionList.split(#"x\"#), [#"x\"#]) // a trailing backslash stays
    }

    func testJoinedEscapesWhatSplitWouldCut() {
        let items = ["fsname=a,b", #"context=x\y"#, "ro"]
        XCTAssertEqual(OptionList.joined(items), #"fsname=a\,b,context=x\\y,ro"#)
        XCTAssertEqual(OptionList.split(OptionList.joined(items)), items)
    }

    /// Found by libFuzzer (scripts/fuzz mount-options): joined escaped by Character, so a
    /// backslash followed by a combining mark (one Character) went to libfuse unescaped.
    func testABackslashBeforeACombiningMarkIsEscaped() {
        let items = ["fsname=a\\\u{732}b", "x,\u{301}"]
        XCTAssertEqual(OptionList.split(OptionList.joined(items)), items)
    }
}
