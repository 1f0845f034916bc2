import CLinux
import Glibc
import PurgeSys
import XCTest

final class FileDescriptorTests: XCTestCase {
    func testWriteThenReadBackAtOffsets() throws {
        let directory = try TemporaryDirectory()
        let file = try FileDescriptor.open("data", in: directory.descriptor, flags: O_RDWR | O_CREAT | O_EXCL, mode: 0o600)
        defer { file.closeQuietly() }
        let bytes: [UInt8] = Array("hello, purgefs".utf8)
        XCTAssertEqual(try bytes.withUnsafeBytes { try file.write($0, at: 3) }, bytes.count)
        var back = [UInt8](repeating: 0xFF, count: 20)
        let read = try back.withUnsafeMutableBytes { try file.read(into: $0, at: 0) }
        XCTAssertEqual(read, 3 + bytes.count)
        XCTAssertEqual(Array(back[0..<3]), [0, 0, 0])
        XCTAssertEqual(Array(back[3..<read]), bytes)
    }

    func testOpenExclusiveOnExistingNameIsEEXIST() throws {
        let directory = try TemporaryDirectory()
        try FileDescriptor.open("x", in: directory.descriptor, flags: O_WRONLY | O_CREAT, mode: 0o600).close()
        XCTAssertThrowsError(try FileDescriptor.open("x", in: directory.descriptor, flags: O_WRONLY | O_CREAT | O_EXCL)) {
            XCTAssertEqual($0 as? Errno, .exists)
        }
    }

    func testPathDescriptorStatusDoesNotFollowSymlinks() throws {
        let directory = try TemporaryDirectory()
        try directory.descriptor.makeSymbolicLink("link", target: "/etc/passwd")
        let link = try FileDescriptor.open("link", in: directory.descriptor, flags: OpenFlags.path | O_NOFOLLOW)
        defer { link.closeQuietly() }
        XCTAssertEqual(try link.status().st_mode & S_IFMT, S_IFLNK)
        XCTAssertEqual(String(cString: try link.readSymbolicLink() + [0]), "/etc/passwd")
    }

    func testReopenTurnsPathDescriptorIntoReadableOne() throws {
        let directory = try TemporaryDirectory()
        let file = try FileDescriptor.open("f", in: directory.descriptor, flags: O_WRONLY | O_CREAT, mode: 0o644)
        _ = try Array("abc".utf8).withUnsafeBytes { try file.write($0, at: 0) }
        try file.close()
        let path = try FileDescriptor.open("f", in: directory.descriptor, flags: OpenFlags.path | O_NOFOLLOW)
        defer { path.closeQuietly() }
        let readable = try path.reopen(flags: O_RDONLY)
        defer { readable.closeQuietly() }
        var buffer = [UInt8](repeating: 0, count: 3)
        _ = try buffer.withUnsafeMutableBytes { try readable.read(into: $0, at: 0) }
        XCTAssertEqual(buffer, Array("abc".utf8))
    }

    func testRenameNoReplaceAndExchange() throws {
        let directory = try TemporaryDirectory()
        for name in ["a", "b"] {
            let file = try FileDescriptor.open(name, in: directory.descriptor, flags: O_WRONLY | O_CREAT, mode: 0o644)
            _ = try Array(name.utf8).withUnsafeBytes { try file.write($0, at: 0) }
            try file.close()
        }
        XCTAssertThrowsError(try directory.descriptor.rename("a", to: "b", in: directory.descriptor, flags: .noReplace)) {
            XCTAssertEqual($0 as? Errno, .exists)
        }
        try directory.descriptor.rename("a", to: "b", in: directory.descriptor, flags: .exchange)
        XCTAssertEqual(try contents(of: "a", in: directory), "b")
        XCTAssertEqual(try contents(of: "b", in: directory), "a")
    }

    func testHardLinkThroughPathDescriptor() throws {
        let directory = try TemporaryDirectory()
        try FileDescriptor.open("f", in: directory.descriptor, flags: O_WRONLY | O_CREAT, mode: 0o644).close()
        let path = try FileDescriptor.open("f", in: directory.descriptor, flags: OpenFlags.path | O_NOFOLLOW)
        defer { path.closeQuietly() }
        try path.link(as: "g", in: directory.descriptor)
        XCTAssertEqual(try path.status().st_nlink, 2)
        XCTAssertEqual(try directory.descriptor.status(of: "g").st_ino, try path.status().st_ino)
    }

    func testSetTimesOmitLeavesThatTimeAlone() throws {
        let directory = try TemporaryDirectory()
        try FileDescriptor.open("f", in: directory.descriptor, flags: O_WRONLY | O_CREAT, mode: 0o644).close()
        let path = try FileDescriptor.open("f", in: directory.descriptor, flags: OpenFlags.path | O_NOFOLLOW)
        defer { path.closeQuietly() }
        try path.setTimes(access: timespec(tv_sec: 1000, tv_nsec: 5), modification: timespec(tv_sec: 2000, tv_nsec: 7))
        try path.setTimes(access: TimeSpec.omit, modification: timespec(tv_sec: 3000, tv_nsec: 0))
        let status = try path.status()
        XCTAssertEqual(status.st_atim.tv_sec, 1000)
        XCTAssertEqual(status.st_atim.tv_nsec, 5)
        XCTAssertEqual(status.st_mtim.tv_sec, 3000)
    }

    func testExtendedAttributesSizeProbeAndShortBuffer() throws {
        let directory = try TemporaryDirectory()
        try FileDescriptor.open("f", in: directory.descriptor, flags: O_WRONLY | O_CREAT, mode: 0o644).close()
        let path = try FileDescriptor.open("f", in: directory.descriptor, flags: OpenFlags.path | O_NOFOLLOW)
        defer { path.closeQuietly() }
        let value = Array("twelve bytes".utf8)
        try value.withUnsafeBytes { try path.setExtendedAttribute("user.test", value: $0, flags: 0) }
        XCTAssertEqual(try path.extendedAttribute("user.test", into: UnsafeMutableRawBufferPointer(start: nil, count: 0)), 12)
        var short = [UInt8](repeating: 0, count: 4)
        XCTAssertThrowsError(try short.withUnsafeMutableBytes { try path.extendedAttribute("user.test", into: $0) }) {
            XCTAssertEqual($0 as? Errno, .outOfRange)
        }
        XCTAssertThrowsError(try path.removeExtendedAttribute("user.absent")) { XCTAssertEqual($0 as? Errno, .noData) }
    }

    func testOpenFileExtendedAttributeTakesAnOpenDescriptorNotAnOPathOne() throws {
        let directory = try TemporaryDirectory()
        let file = try FileDescriptor.open("f", in: directory.descriptor, flags: O_WRONLY | O_CREAT, mode: 0o644)
        defer { file.closeQuietly() }
        let path = try FileDescriptor.open("f", in: directory.descriptor, flags: OpenFlags.path | O_NOFOLLOW)
        defer { path.closeQuietly() }
        let value = Array("seven b".utf8)
        try value.withUnsafeBytes { try path.setExtendedAttribute("user.test", value: $0, flags: 0) }
        var read = [UInt8](repeating: 0, count: 16)
        let count = try read.withUnsafeMutableBytes { try file.openFileExtendedAttribute("user.test", into: $0) }
        XCTAssertEqual(Array(read[..<count]), value)
        XCTAssertEqual(try file.openFileExtendedAttribute("user.test", into: UnsafeMutableRawBufferPointer(start: nil, count: 0)), 7)
        XCTAssertThrowsError(try file.openFileExtendedAttribute("user.absent", into: UnsafeMutableRawBufferPointer(start: nil, count: 0))) {
            XCTAssertEqual($0 as? Errno, .noData)
        }
        // An O_PATH descriptor is refused: it takes the /proc/self/fd link (`extendedAttribute`).
        XCTAssertThrowsError(try path.openFileExtendedAttribute("user.test", into: UnsafeMutableRawBufferPointer(start: nil, count: 0))) {
            XCTAssertEqual($0 as? Errno, .badFileDescriptor)
        }
    }

    func testDirectoryStreamListsEveryEntryAndResumesAtOffsets() throws {
        let directory = try TemporaryDirectory()
        let names = (0..<500).map { "entry-\($0)" }
        for name in names { try directory.descriptor.makeDirectory(name, mode: 0o755) }
        let stream = try DirectoryStream(directory.descriptor)
        var seen: [String] = []
        var resumeAt: Int64 = 0
        while let entry = try stream.next() {
            if !entry.isDotOrDotDot { seen.append(String(cString: entry.name)) }
            if seen.count == 100 { resumeAt = entry.nextOffset }
        }
        XCTAssertEqual(Set(seen), Set(names))
        stream.seek(to: resumeAt)
        var rest = 0
        while let entry = try stream.next() { if !entry.isDotOrDotDot { rest += 1 } }
        XCTAssertEqual(rest, 400)
    }

    func testSparseFileSeekDataAndHole() throws {
        let directory = try TemporaryDirectory()
        let file = try FileDescriptor.open("sparse", in: directory.descriptor, flags: O_RDWR | O_CREAT, mode: 0o644)
        defer { file.closeQuietly() }
        let offset: Int64 = 1 << 20
        _ = try Array("data".utf8).withUnsafeBytes { try file.write($0, at: offset) }
        XCTAssertEqual(try file.seek(to: 0, whence: clinux_SEEK_HOLE), 0)
        XCTAssertEqual(try file.seek(to: 0, whence: clinux_SEEK_DATA), offset)
    }

    private func contents(of name: String, in directory: TemporaryDirectory) throws -> String {
        let file = try FileDescriptor.open(name, in: directory.descriptor, flags: O_RDONLY)
        defer { file.closeQuietly() }
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = try buffer.withUnsafeMutableBytes { try file.read(into: $0, at: 0) }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }
}
