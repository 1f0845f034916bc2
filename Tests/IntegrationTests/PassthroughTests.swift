import Foundation
import Glibc
import XCTest

/// Kernel passthrough (`-o passthrough=on`, issue 16): a reader is served by
/// the kernel from the backing file. What shows it from outside is the
/// kernel's own rule: while a passed-through reader holds a file open, an
/// open of it for writing fails with `EIO` (writes never bypass the daemon).
/// Files the daemon must serve (a linked clone's shared data) are not passed
/// through, and a purge still waits for the reader's close.
class PassthroughTestCase: PurgeTestCase {
    static let size = 3 << 20
    let data = tiled(PassthroughTestCase.size, seed: 16)

    override func setUpWithError() throws {
        // Kernel passthrough came with Linux 6.9.
        var name = utsname()
        uname(&name)
        let release = withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let numbers = release.split(whereSeparator: { !$0.isNumber }).prefix(2).compactMap { Int($0) }
        if numbers.count == 2 && (numbers[0], numbers[1]) < (6, 9) {
            throw XCTSkip("kernel \(release) has no FUSE passthrough (6.9+)")
        }
        // The kernel offers it; registering a backing file takes CAP_SYS_ADMIN.
        if geteuid() != 0 {
            throw featureUnavailable("FUSE passthrough needs root for its backing files (kernel \(release) offers it)")
        }
        try super.setUpWithError()
    }

    override func prepareContainer() throws {
        XCTAssertEqual(mkdir(fixture.container + "/Library", 0o755), 0)
        XCTAssertEqual(mkdir(fixture.container + "/Library/Caches", 0o755), 0)
        XCTAssertEqual(writeBytes(fixture.container + "/data", data), 0)
        XCTAssertEqual(writeBytes(fixture.container + "/Library/Caches/cached", data), 0)
    }

    /// Reads the file open as `fd` whole.
    func readWhole(_ fd: Int32) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset: off_t = 0
        while true {
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, offset) }
            guard n > 0 else { break }
            bytes += buffer[0..<n]
            offset += off_t(n)
        }
        return bytes
    }

    /// Opens `path` for writing: the descriptor, or the errno as a negative number.
    func openForWriting(_ path: String) -> Int32 {
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        return fd >= 0 ? fd : -errno
    }
}

final class PassthroughTests: PassthroughTestCase {
    override var mountOptions: [String] { ["passthrough=on"] }

    func testReaderIsServedByTheKernelAndWritersWaitForItsClose() throws {
        let path = fixture.mountpoint + "/data"
        let reader = open(path, O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(reader, 0)
        XCTAssertEqual(readWhole(reader), data, "the bytes read through the kernel")
        // A second reader shares the backing file.
        let second = open(path, O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(second, 0)
        XCTAssertEqual(readWhole(second).count, data.count)
        XCTAssertEqual(openForWriting(path), -EIO, "the kernel's rule while a passed-through reader is open")
        close(second)
        close(reader)
        // Closed: a writer opens it (the daemon may not have seen the release
        // yet; it then answers an ordinary open, which the kernel accepts).
        let writer = openForWriting(path)
        guard writer >= 0 else { return XCTFail("open for writing after the readers closed: \(Errno.name(-writer))") }
        XCTAssertEqual(pwrite(writer, "new!", 4, 0), 4)
        // Readers opened while the writer is open are ordinary, and see the write.
        let during = open(path, O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(during, 0)
        XCTAssertEqual(Array(readWhole(during).prefix(4)), Array("new!".utf8))
        close(during)
        close(writer)
        XCTAssertEqual(Array((readBytes(fixture.container + "/data") ?? []).prefix(4)), Array("new!".utf8))
        // And a reader after it is passed through again, with the new data.
        XCTAssertTrue(eventually {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            defer { close(fd) }
            return fd >= 0 && Array(readWhole(fd).prefix(4)) == Array("new!".utf8)
                && openForWriting(path) == -EIO
        }, "a new reader is passed through once the writer's release is seen")
    }

    func testLinkedCloneIsServedByTheDaemon() throws {
        let m = fixture.mountpoint
        let copy = try Subprocess.run(["cp", m + "/data", m + "/clone"])
        XCTAssertEqual(copy.status, 0, "\(copy)")
        XCTAssertGreaterThan(numberAttr(m, "clone_savings") ?? 0, 0, "cp made a linked clone")
        let reader = open(m + "/clone", O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(reader, 0)
        defer { close(reader) }
        XCTAssertEqual(readWhole(reader), data)
        // Not passed through: a writer may open it, and the clone breaks away.
        let writer = openForWriting(m + "/clone")
        guard writer >= 0 else { return XCTFail("open the clone for writing: \(Errno.name(-writer))") }
        XCTAssertEqual(pwrite(writer, "mine", 4, 0), 4)
        close(writer)
        XCTAssertEqual(Array(readWhole(reader).prefix(4)), Array("mine".utf8))
        XCTAssertEqual(readBytes(fixture.container + "/data"), data, "the source keeps its data")
    }

    func testFileAReadRuleCouldMatchIsServedByTheDaemon() throws {
        let m = fixture.mountpoint
        let add = try Subprocess.run(
            [try MountFixture.locateBinary(), "fault", "add", m, "--op", "read", "--path", "data", "--errno", "EIO"], timeout: 30)
        XCTAssertEqual(add.status, 0, "\(add)")
        let reader = open(m + "/data", O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(reader, 0)
        defer { close(reader) }
        var byte: UInt8 = 0
        XCTAssertEqual(pread(reader, &byte, 1, 0), -1, "the rule reaches the read")
        XCTAssertEqual(errno, EIO)
        // Not passed through: a writer opens it while the reader is open.
        let writer = openForWriting(m + "/data")
        XCTAssertGreaterThanOrEqual(writer, 0, "open for writing: \(Errno.name(-writer))")
        if writer >= 0 { close(writer) }
        // Another file, which no rule matches, is passed through.
        let other = open(m + "/Library/Caches/cached", O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(other, 0)
        defer { close(other) }
        XCTAssertEqual(openForWriting(m + "/Library/Caches/cached"), -EIO)
    }

    func testPurgeWaitsForThePassedThroughReader() throws {
        let m = fixture.mountpoint
        let reader = open(m + "/Library/Caches/cached", O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(reader, 0)
        XCTAssertEqual(openForWriting(m + "/Library/Caches/cached"), -EIO, "passed through")
        purge("all")
        XCTAssertEqual(gone(["Library/Caches/cached"]), [], "an open file is not purged")
        XCTAssertEqual(readWhole(reader), data)
        close(reader)
        XCTAssertTrue(eventually(timeout: 10) {
            _ = setAttr(m, pf("purge"), "all")
            return gone(["Library/Caches/cached"]) == ["Library/Caches/cached"]
        }, "once closed, it is purged")
    }
}

/// The same without the option: readers go through the daemon, and a
/// writer opens a file a reader holds open, as natively.
final class PassthroughOffTests: PassthroughTestCase {
    func testWriterOpensWhileReaderIsOpen() throws {
        let path = fixture.mountpoint + "/data"
        let reader = open(path, O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(reader, 0)
        defer { close(reader) }
        XCTAssertEqual(readWhole(reader), data)
        let writer = openForWriting(path)
        guard writer >= 0 else { return XCTFail("open for writing while a reader is open: \(Errno.name(-writer))") }
        close(writer)
    }
}
