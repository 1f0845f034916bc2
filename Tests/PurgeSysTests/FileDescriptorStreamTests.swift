import Glibc
import PurgeSys
import XCTest

final class FileDescriptorStreamTests: XCTestCase {
    /// The read end of a pipe that holds `text` and whose write end is closed.
    private func pipe(holding text: String) throws -> FileDescriptor {
        let pipe = try FileDescriptor.pipe()
        try pipe.write.writeAll(text)
        try pipe.write.close()
        return pipe.read
    }

    func testPipeCarriesLinesAndBothEndsAreCloseOnExec() throws {
        let pipe = try FileDescriptor.pipe()
        defer { pipe.read.closeQuietly() }
        XCTAssertTrue(try pipe.read.isCloseOnExec())
        XCTAssertTrue(try pipe.write.isCloseOnExec())
        try pipe.write.writeAll("ok\nrest")
        try pipe.write.close()
        XCTAssertEqual(try pipe.read.readLine(), Array("ok".utf8))
        XCTAssertEqual(try pipe.read.readAll(), Array("rest".utf8), "readLine consumed nothing after the newline")
        XCTAssertEqual(try pipe.read.readLine(), [], "end of file")
    }

    func testReadAllStopsAtTheLimit() throws {
        let input = try pipe(holding: "0123456789")
        defer { input.closeQuietly() }
        XCTAssertEqual(try input.readAll(limit: 4), Array("0123".utf8))
        XCTAssertEqual(try input.readAll(), Array("456789".utf8))
    }

    func testReadLineStopsAtTheLimit() throws {
        let input = try pipe(holding: "abcdef\n")
        defer { input.closeQuietly() }
        XCTAssertEqual(try input.readLine(limit: 3), Array("abc".utf8))
    }

    func testWriteAllLoopsOverPartialWrites() throws {
        let directory = try TemporaryDirectory()
        let file = try FileDescriptor.open("big", in: directory.descriptor, flags: O_WRONLY | O_CREAT, mode: 0o600)
        let bytes = [UInt8](repeating: 7, count: 1 << 20)
        try bytes.withUnsafeBytes { try file.writeAll($0) }
        try file.close()
        XCTAssertEqual(try FileDescriptor.readFile(directory.path + "/big"), bytes)
    }

    func testReadFileOfAMissingFileIsENOENT() throws {
        let directory = try TemporaryDirectory()
        XCTAssertThrowsError(try FileDescriptor.readFile(directory.path + "/missing")) {
            XCTAssertEqual($0 as? Errno, .noEntry)
        }
        XCTAssertFalse(try FileDescriptor.readFile("/proc/self/mountinfo").isEmpty)
    }

    func testWriteOnAReadEndIsEBADF() throws {
        let pipe = try FileDescriptor.pipe()
        defer { pipe.read.closeQuietly(); pipe.write.closeQuietly() }
        XCTAssertThrowsError(try pipe.read.writeAll("x")) { XCTAssertEqual($0 as? Errno, .badFileDescriptor) }
    }

    func testDuplicateOntoAndSetCloseOnExec() throws {
        let pipe = try FileDescriptor.pipe()
        defer { pipe.read.closeQuietly(); pipe.write.closeQuietly() }
        let spare = FileDescriptor(rawValue: dup(pipe.write.rawValue))
        XCTAssertFalse(try spare.isCloseOnExec())
        try pipe.write.duplicate(onto: spare)
        XCTAssertFalse(try spare.isCloseOnExec(), "dup2 leaves the target inheritable")
        try spare.writeAll("via the copy\n")
        try spare.setCloseOnExec()
        XCTAssertTrue(try spare.isCloseOnExec())
        try spare.close()
        XCTAssertEqual(try pipe.read.readLine(), Array("via the copy".utf8))
        XCTAssertThrowsError(try pipe.write.duplicate(onto: FileDescriptor(rawValue: -1))) {
            XCTAssertEqual($0 as? Errno, .badFileDescriptor)
        }
    }
}
