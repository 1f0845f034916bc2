import XCTest
import PurgeCore

final class JSONValueTests: XCTestCase {
    func testWritesFieldsInOrder() {
        let value = JSONValue.object([("b", .integer(UInt64.max)), ("a", .array([.null, .bool(true), .string("x\"\n\u{1}")])),
                                      ("e", .object([])), ("f", .array([]))])
        XCTAssertEqual(value.pretty, """
            {
              "b": 18446744073709551615,
              "a": [
                null,
                true,
                "x\\"\\n\\u0001"
              ],
              "e": {},
              "f": []
            }
            """)
    }

    func testIntegersAboveTheLargestSizeReadAsNone() {
        // A report given back to purgefs report or explore --replay: no sum of its figures can overflow.
        XCTAssertEqual(JSONValue(parsing: #"{"n":4611686018427387904}"#)?["n"]?.integerValue, ByteSize.maximum)
        XCTAssertNil(JSONValue(parsing: #"{"n":4611686018427387905}"#)?["n"]?.integerValue)
        XCTAssertNil(JSONValue(parsing: #"{"n":18446744073709551615}"#)?["n"]?.integerValue)
    }

    func testReadsWhatItWrites() {
        let value = JSONValue.object([("path", .string("caches/é \"q\" \\ \t")), ("n", .number("-1.5e3")),
                                      ("list", .array([.integer(1), .object([("k", .bool(false))])]))])
        XCTAssertEqual(JSONValue(parsing: value.pretty), value)
    }

    func testReadsEscapesAndSurrogates() {
        XCTAssertEqual(JSONValue(parsing: #" "a\/b\u00e9\ud83d\ude00" "#), .string("a/bé😀"))
        XCTAssertEqual(JSONValue(parsing: #"{"time":1764489600.123}"#)?["time"]?.doubleValue, 1764489600.123)
        XCTAssertEqual(JSONValue(parsing: #"{"bytes":18446744073709551615}"#)?["bytes"], .number("18446744073709551615"))
    }

    func testRefusesWhatIsNotJSON() {
        for text in ["", "{", #"{"a":1"#, #"{"a" 1}"#, #"{"a":1,}"#, "[1 2]", "nul", #""abc"#, "01x", "+1", #"{"a":"b"} x"#,
                     "\"tab\there\"", #"{"path":"caches/a.b"#] {
            XCTAssertNil(JSONValue(parsing: text), text)
        }
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        XCTAssertNil(JSONValue(parsing: deep))
    }
}
