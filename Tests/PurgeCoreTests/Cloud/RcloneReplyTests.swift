import PurgeCore
import XCTest

/// Reading rclone's remote-control answers: JSON, RFC 3339 times, list and stat items.
final class RcloneReplyTests: XCTestCase {
    func testTimes() {
        XCTAssertEqual(RcloneReply.nanoseconds(rfc3339: "1970-01-01T00:00:00Z"), 0)
        XCTAssertEqual(RcloneReply.nanoseconds(rfc3339: "2026-12-03T13:48:39.499227253Z"),
                       1_796_305_719_499_227_253)
        XCTAssertEqual(RcloneReply.nanoseconds(rfc3339: "2026-12-03T13:48:39.5Z"), 1_796_305_719_500_000_000)
        XCTAssertEqual(RcloneReply.nanoseconds(rfc3339: "2026-12-03T14:48:39+01:00"), 1_796_305_719_000_000_000)
        XCTAssertEqual(RcloneReply.nanoseconds(rfc3339: "2000-02-29T00:00:00Z"), 951_782_400_000_000_000)
        for bad in ["", "2026-12-03", "2026-12-03T13:48:39", "2026-13-03T13:48:39Z", "2026-12-03T13:48:39.Z", "1969-12-31T23:59:59Z",
                    "2026-12-03T13:48:39Zx"] {
            XCTAssertNil(RcloneReply.nanoseconds(rfc3339: bad), bad)
        }
        // The day arithmetic agrees with the calendar the metrics use.
        XCTAssertEqual(UTCCalendar.iso8601(1_796_305_719), "2026-12-03T13:48:39Z")
    }

    func testJSON() {
        let text = #"{"a":[1,-2.5,true,false,null],"b":"x\"\\\/\n\u00e9\ud83d\ude00","c":{},"d":9007199254740993}"#
        let tree = JSONValue(parsing: text)
        XCTAssertEqual(tree?["a"]?.arrayValue?.count, 5)
        XCTAssertEqual(tree?["a"]?.arrayValue?.first?.integerValue, 1)
        XCTAssertEqual(tree?["a"]?.arrayValue?[1].signedIntegerValue, nil, "-2.5 is not whole")
        XCTAssertEqual(tree?["a"]?.arrayValue?[1].doubleValue, -2.5)
        XCTAssertEqual(tree?["b"]?.stringValue, "x\"\\/\n\u{e9}\u{1F600}")
        XCTAssertEqual(tree?["c"], .object([]))
        XCTAssertEqual(tree?["d"]?.integerValue, 9_007_199_254_740_993, "whole numbers stay exact")
        for bad in ["", "{", "[1,]", "{\"a\"}", "\"\u{1}\"", "nul", "{} x", "[1 2]"] {
            XCTAssertNil(JSONValue(parsing: bad), bad)
        }
    }

    func testListStatAndErrors() throws {
        let list = #"{"list":[{"Path":"Documents/a.txt","Name":"a.txt","Size":6,"MimeType":"text/plain","ModTime":"2026-12-03T13:48:39Z","IsDir":false},{"Path":"Documents","Size":-1,"ModTime":"2026-12-03T13:48:39Z","IsDir":true}]}"#
        let items = try XCTUnwrap(RcloneReply.list(try XCTUnwrap(JSONValue(parsing: list))))
        XCTAssertEqual(items, [
            RcloneItem(path: "Documents/a.txt", size: 6, modified: 1_796_305_719_000_000_000, isDirectory: false),
            RcloneItem(path: "Documents", size: 0, modified: 1_796_305_719_000_000_000, isDirectory: true),
        ])
        let missing = try XCTUnwrap(JSONValue(parsing: #"{"item":null}"#))
        XCTAssertEqual(RcloneReply.stat(missing), .some(nil))
        let error = try XCTUnwrap(JSONValue(parsing: #"{"error":"object not found","status":404}"#))
        XCTAssertEqual(RcloneReply.error(in: error), "object not found")
        let lines = try XCTUnwrap(JSONValue(parsing: #"{"error":" AccessDenied: Access Denied\n\tstatus code: 403,\r\n request id: \n","status":500}"#))
        XCTAssertEqual(RcloneReply.error(in: lines), "AccessDenied: Access Denied status code: 403, request id:", "one line")
        XCTAssertNil(RcloneReply.stat(error))
        XCTAssertNil(RcloneReply.list(try XCTUnwrap(JSONValue(parsing: #"{"list":[{"Path":"a"}]}"#))), "a malformed item")
        XCTAssertEqual(RcloneReply.request([("fs", "s3:b"), ("remote", "a\"b")], raw: [("opt", "{}")]),
                       #"{"fs":"s3:b","remote":"a\"b","opt":{}}"#)
    }
}

/// The client side of HTTP/1.0 that talks to rclone's remote control.
final class HTTPMessageTests: XCTestCase {
    func testHeads() throws {
        XCTAssertEqual(HTTPMessage.requestHead("POST", "/operations/list", headers: [("Content-Length", "2")]),
                       "POST /operations/list HTTP/1.0\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n")
        let reply = Array("HTTP/1.0 404 Not Found\r\nContent-Type: application/json\r\nContent-Length:  17 \r\n\r\n{\"error\":\"x\"}".utf8)
        let end = try XCTUnwrap(HTTPMessage.headEnd(in: reply))
        XCTAssertEqual(String(decoding: reply[end...], as: UTF8.self), "{\"error\":\"x\"}")
        let head = try XCTUnwrap(HTTPMessage.responseHead(reply[..<end]))
        XCTAssertEqual(head.status, 404)
        XCTAssertEqual(head.contentLength, 17)
        XCTAssertEqual(head.headers["content-type"], "application/json")
        XCTAssertNil(HTTPMessage.headEnd(in: Array("HTTP/1.0 200 OK\r\n".utf8)))
        XCTAssertNil(HTTPMessage.responseHead(Array("SSH-2.0 hello\r\n\r\n".utf8)[...]))
        XCTAssertNil(HTTPMessage.responseHead(Array("HTTP/1.1 200 OK\r\nbroken\r\n\r\n".utf8)[...]))
    }

    func testEncodings() {
        XCTAssertEqual(HTTPMessage.percentEncoded("[s3:b]/Documents/a b%é.txt"), "%5Bs3%3Ab%5D/Documents/a%20b%25%C3%A9.txt")
        XCTAssertEqual(HTTPMessage.percentEncoded("a/b", keepingSlashes: false), "a%2Fb")
        XCTAssertEqual(HTTPMessage.base64(Array("".utf8)), "")
        XCTAssertEqual(HTTPMessage.base64(Array("f".utf8)), "Zg==")
        XCTAssertEqual(HTTPMessage.base64(Array("fo".utf8)), "Zm8=")
        XCTAssertEqual(HTTPMessage.base64(Array("foo".utf8)), "Zm9v")
        XCTAssertEqual(HTTPMessage.basicAuthorization(user: "u", password: "p"), "Basic dTpw")
    }
}
