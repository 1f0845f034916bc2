import Glibc
import PurgeSys
import XCTest

final class FileDescriptorLinesTests: XCTestCase {
    private func lines(of content: [UInt8]) throws -> [[UInt8]] {
        let directory = try TemporaryDirectory()
        let file = try FileDescriptor.open("f", in: directory.descriptor, flags: O_RDWR | O_CREAT, mode: 0o644)
        defer { file.closeQuietly() }
        try file.writeAll(String(decoding: content, as: UTF8.self))
        _ = try file.seek(to: 0, whence: SEEK_SET)
        var result: [[UInt8]] = []
        try file.forEachLine { result.append($0) }
        return result
    }

    func testLinesWithAndWithoutAFinalNewline() throws {
        XCTAssertEqual(try lines(of: Array("a\n\nbc\n".utf8)), [Array("a".utf8), [], Array("bc".utf8)])
        XCTAssertEqual(try lines(of: Array("a\nbc".utf8)), [Array("a".utf8), Array("bc".utf8)])
        XCTAssertEqual(try lines(of: []), [])
    }

    func testLinesAcrossChunks() throws {
        let long = [UInt8](repeating: UInt8(ascii: "x"), count: 100_000)
        let content = long + [0x0A] + Array("short\n".utf8) + long
        XCTAssertEqual(try lines(of: content), [long, Array("short".utf8), long])
    }
}
