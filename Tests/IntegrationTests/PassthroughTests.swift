import Foundation
import Glibc
import Synchronization
import XCTest

/// Kernel passthrough (the default; `-o passthrough=off` turns it off): a
/// reader is served by the kernel from the backing file. What shows it from
/// outside is a read rule added after the open: it reaches every read the
/// daemon serves, and none of a passed-through file (`readsBypassDaemon`).
/// A writer opening a file passed-through readers hold succeeds, and its
/// writes go through the daemon (room, the ledger) to the backing file the
/// readers read. Files the daemon must serve (a linked clone's shared data)
/// are not passed through, a passed-through file is copied, never made a
/// linked clone, and a purge still waits for the reader's close.
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

    /// Whether the kernel reads the file open as `fd` (`relative` in the
    /// container) from its backing file: a read rule added now fails the
    /// next read the daemon serves (the file's cached pages dropped first),
    /// and reaches no read of a file passed through at its open.
    func readsBypassDaemon(_ fd: Int32, _ relative: String, file: StaticString = #filePath, line: UInt = #line) throws -> Bool {
        let binary = try MountFixture.locateBinary()
        let add = try Subprocess.run(
            [binary, "fault", "add", fixture.mountpoint, "--op", "read", "--path", relative, "--errno", "EIO"], timeout: 30)
        XCTAssertEqual(add.status, 0, "\(add)", file: file, line: line)
        defer {
            let clear = try? Subprocess.run([binary, "fault", "clear", fixture.mountpoint], timeout: 30)
            XCTAssertEqual(clear?.status, 0, "fault clear", file: file, line: line)
        }
        XCTAssertEqual(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0, file: file, line: line)
        var byte: UInt8 = 0
        return pread(fd, &byte, 1, 0) == 1
    }

    /// Opens `relative` read-only, and checks the kernel reads it from its backing file.
    func openPassedThrough(_ relative: String, file: StaticString = #filePath, line: UInt = #line) throws -> Int32 {
        let fd = open(fixture.mountpoint + "/" + relative, O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(fd, 0, "open \(relative): \(Errno.name(errno))", file: file, line: line)
        XCTAssertTrue(try readsBypassDaemon(fd, relative, file: file, line: line), "\(relative) passed through", file: file, line: line)
        return fd
    }

    /// Copies `source` to `destination` (in the mount) with cp(1), as a linked clone where purgefs makes one.
    func copy(_ source: String, to destination: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let m = fixture.mountpoint
        let result = try Subprocess.run(["cp", m + "/" + source, m + "/" + destination])
        XCTAssertEqual(result.status, 0, "\(result)", file: file, line: line)
    }

    /// Opens `path` for writing: the descriptor, or the errno as a negative number.
    func openForWriting(_ path: String, _ flags: Int32 = O_WRONLY) -> Int32 {
        let fd = open(path, flags | O_CLOEXEC)
        return fd >= 0 ? fd : -errno
    }
}

final class PassthroughTests: PassthroughTestCase {
    override var mountOptions: [String] { ["capacity=64M"] }

    override func prepareContainer() throws {
        try super.prepareContainer()
        XCTAssertEqual(writeBytes(fixture.container + "/other", tiled(PassthroughTestCase.size, seed: 7)), 0)
        setTimes(fixture.container + "/other", 946_684_800)
        XCTAssertEqual(writeBytes(fixture.container + "/small-other", tiled(8 << 10, seed: 9)), 0)
        setTimes(fixture.container + "/small-other", 946_684_800)
    }

    func testReaderIsServedByTheKernelAndAWriterOpensBesideIt() throws {
        let path = fixture.mountpoint + "/data"
        let reader = open(path, O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(reader, 0)
        defer { close(reader) }
        XCTAssertEqual(readWhole(reader), data, "the bytes read through the kernel")
        XCTAssertTrue(try readsBypassDaemon(reader, "data"), "passed through")
        // A second reader shares the backing file.
        let second = open(path, O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(second, 0)
        defer { close(second) }
        XCTAssertEqual(readWhole(second).count, data.count)
        // A writer opens, and its write is what the readers read next.
        for flags in [O_WRONLY, O_RDWR] {
            let writer = openForWriting(path, flags)
            guard writer >= 0 else { return XCTFail("open (\(flags)) while passed-through readers are open: \(Errno.name(-writer))") }
            XCTAssertEqual(pwrite(writer, "new\(flags)", 4, 0), 4)
            close(writer)
            XCTAssertEqual(Array(readWhole(reader).prefix(4)), Array("new\(flags)".utf8))
            XCTAssertEqual(Array(readWhole(second).prefix(4)), Array("new\(flags)".utf8))
        }
        XCTAssertEqual(Array((readBytes(fixture.container + "/data") ?? []).prefix(4)), Array("new2".utf8))
        XCTAssertTrue(try readsBypassDaemon(reader, "data"), "still passed through")
        // A reader opened meanwhile (the writers closed) is passed through too.
        let third = open(path, O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(third, 0)
        defer { close(third) }
        XCTAssertTrue(try readsBypassDaemon(third, "data"), "a new reader is passed through")
    }

    /// The kernel takes an open's reply when the opener's thread resumes,
    /// which may be after a reader answered later registered the node's
    /// backing file: an open answered without it then fails (`EIO`). So a
    /// write-only open, answered without the backing file while no reader
    /// is passed through, keeps readers from passing through until its
    /// release. Writers and readers open one file at once, a plain one and
    /// a linked clone that the writers' appends break; no open may fail.
    func testWriteOnlyOpensBesideReadersOpeningAtOnceNeverFail() throws {
        let m = fixture.mountpoint
        try copy("data", to: "clone")
        XCTAssertGreaterThan(numberAttr(m, "clone_savings") ?? 0, 0, "cp made a linked clone")
        for name in ["data", "clone"] {
            let path = m + "/" + name
            let failed = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 2) { side in
                for round in 0..<2_000 {
                    let flags = side == 0 ? O_WRONLY | O_APPEND : O_RDONLY
                    let fd = open(path, flags | O_CLOEXEC)
                    guard fd >= 0 else {
                        let error = Errno.name(errno)
                        failed.withLock { $0.append("\(side == 0 ? "write-only" : "read-only") open \(round): \(error)") }
                        continue
                    }
                    if side == 0 && round % 500 == 0 { XCTAssertEqual(write(fd, "+", 1), 1) }
                    close(fd)
                }
            }
            let failures = failed.withLock { $0 }
            XCTAssertEqual(failures.count, 0, "\(name): \(failures.prefix(5))")
        }
        XCTAssertEqual(readBytes(m + "/clone"), data + Array(repeating: UInt8(ascii: "+"), count: 4), "the clone broke away")
        XCTAssertEqual(readBytes(fixture.container + "/data")?.count, data.count + 4)
        // Once the writers have closed, a reader passes through again.
        let reader = try openPassedThrough("clone")
        close(reader)
    }

    func testWritesBesidePassedThroughReadersAreChargedAndRecorded() throws {
        let m = fixture.mountpoint
        let path = m + "/Library/Caches/cached"
        let reader = open(path, O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(reader, 0)
        defer { close(reader) }
        XCTAssertTrue(try readsBypassDaemon(reader, "Library/Caches/cached"), "passed through")
        let available = numberAttr(m, "available") ?? 0
        let size = numberAttr(m + "/Library/Caches", "size") ?? 0
        let writer = openForWriting(path, O_RDWR)
        guard writer >= 0 else { return XCTFail("open for writing while a passed-through reader is open: \(Errno.name(-writer))") }
        let grown = [UInt8](repeating: 0x5a, count: 1 << 20)
        XCTAssertEqual(pwrite(writer, grown, grown.count, off_t(Self.size)), grown.count)
        XCTAssertEqual(fsync(writer), 0)
        close(writer)
        let read = readWhole(reader)
        XCTAssertEqual(read.count, Self.size + grown.count, "the reader reads the grown file")
        XCTAssertEqual(Array(read.suffix(4)), [0x5a, 0x5a, 0x5a, 0x5a])
        XCTAssertTrue(eventually { (numberAttr(m, "available") ?? .max) <= available - UInt64(grown.count) },
                      "the device is charged: \(numberAttr(m, "available") ?? 0) of \(available) before")
        XCTAssertTrue(eventually { (numberAttr(m + "/Library/Caches", "size") ?? 0) >= size + UInt64(grown.count) },
                      "the ledger has it: \(numberAttr(m + "/Library/Caches", "size") ?? 0) of \(size) before")
    }

    func testSharedMappingOfAWriterBesidePassedThroughReaders() throws {
        let path = fixture.mountpoint + "/data"
        let reader = open(path, O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(reader, 0)
        defer { close(reader) }
        XCTAssertTrue(try readsBypassDaemon(reader, "data"), "passed through")
        let writer = openForWriting(path, O_RDWR)
        guard writer >= 0 else { return XCTFail("open for writing: \(Errno.name(-writer))") }
        defer { close(writer) }
        // A shared mapping is of the backing file: the readers see its stores.
        let shared = mmap(nil, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, writer, 0)
        guard shared != MAP_FAILED, let shared else { return XCTFail("mmap MAP_SHARED: \(Errno.name(errno))") }
        shared.copyMemory(from: "MAPS", byteCount: 4)
        XCTAssertEqual(msync(shared, 4096, MS_SYNC), 0)
        munmap(shared, 4096)
        XCTAssertEqual(Array(readWhole(reader).prefix(4)), Array("MAPS".utf8))
        // A private one changes nothing but itself.
        let own = mmap(nil, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, writer, 0)
        guard own != MAP_FAILED, let own else { return XCTFail("mmap MAP_PRIVATE: \(Errno.name(errno))") }
        own.copyMemory(from: "PRIV", byteCount: 4)
        munmap(own, 4096)
        // The reader maps it too.
        let mapped = mmap(nil, 4096, PROT_READ, MAP_SHARED, reader, 0)
        guard mapped != MAP_FAILED, let mapped else { return XCTFail("mmap of the reader: \(Errno.name(errno))") }
        XCTAssertEqual(Array(UnsafeRawBufferPointer(start: mapped, count: 4)), Array("MAPS".utf8))
        munmap(mapped, 4096)
        close(writer)
        XCTAssertEqual(Array((readBytes(fixture.container + "/data") ?? []).prefix(4)), Array("MAPS".utf8))
    }

    func testWriterBesidePassedThroughReadersIsRefusedRoom() throws {
        let m = fixture.mountpoint
        let reader = try openPassedThrough("data")
        defer { close(reader) }
        let writer = openForWriting(m + "/data")
        guard writer >= 0 else { return XCTFail("open for writing: \(Errno.name(-writer))") }
        defer { close(writer) }
        // 64 MiB of capacity: 128 MiB never fits.
        let chunk = [UInt8](repeating: 0x33, count: 1 << 20)
        var offset = off_t(Self.size)
        var failure: Int32 = 0
        for _ in 0..<128 {
            let n = pwrite(writer, chunk, chunk.count, offset)
            if n < 0 { failure = errno; break }
            offset += off_t(n)
        }
        XCTAssertEqual(Errno.name(failure), Errno.name(ENOSPC), "the device's room ends the writes")
        XCTAssertLessThanOrEqual(offset, 64 << 20)
        XCTAssertEqual(Array(readWhole(reader).prefix(16)), Array(data.prefix(16)))
    }

    /// A reader of a small file registers no backing file: it is served
    /// through the daemon and the page cache, and reads what a writer
    /// opened beside it wrote.
    func testSmallFileIsServedThroughTheDaemon() throws {
        let m = fixture.mountpoint
        let small = tiled(16 << 10, seed: 5)
        XCTAssertEqual(writeBytes(m + "/small", small), 0)
        let reader = open(m + "/small", O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(reader, 0)
        defer { close(reader) }
        XCTAssertEqual(readWhole(reader), small)
        XCTAssertFalse(try readsBypassDaemon(reader, "small"), "a small file is not passed through")
        XCTAssertEqual(readWhole(reader), small, "in the page cache again")
        for (index, flags) in [O_WRONLY, O_RDWR].enumerated() {
            let writer = openForWriting(m + "/small", flags)
            guard writer >= 0 else { return XCTFail("open (\(flags)) beside a reader: \(Errno.name(-writer))") }
            let text = Array("new\(index)".utf8)
            XCTAssertEqual(pwrite(writer, text, 4, 0), 4)
            XCTAssertEqual(Array(readWhole(reader).prefix(4)), text, "the open reader reads the write at once")
            close(writer)
            let second = open(m + "/small", O_RDONLY | O_CLOEXEC)
            XCTAssertGreaterThanOrEqual(second, 0)
            XCTAssertEqual(readWhole(second), text + small.dropFirst(4), "a reader opened after it")
            close(second)
        }
        XCTAssertEqual(readBytes(fixture.container + "/small") ?? [], Array("new1".utf8) + small.dropFirst(4))
    }

    /// A file cut small while passed-through readers hold it keeps its
    /// backing file: a reader opened then passes through with it (the
    /// kernel fails an open without it), and reads the new bytes.
    func testReaderOfAFileCutSmallBesidePassedThroughReadersPassesThrough() throws {
        let m = fixture.mountpoint
        let reader = try openPassedThrough("data")
        defer { close(reader) }
        let writer = openForWriting(m + "/data", O_WRONLY | O_TRUNC)
        guard writer >= 0 else { return XCTFail("open O_TRUNC beside a reader: \(Errno.name(-writer))") }
        XCTAssertEqual(pwrite(writer, "tiny", 4, 0), 4)
        close(writer)
        let late = open(m + "/data", O_RDONLY | O_CLOEXEC)
        guard late >= 0 else { return XCTFail("open of the small file beside a passed-through reader: \(Errno.name(errno))") }
        defer { close(late) }
        XCTAssertEqual(readWhole(late), Array("tiny".utf8))
        XCTAssertEqual(readWhole(reader), Array("tiny".utf8))
        XCTAssertTrue(try readsBypassDaemon(late, "data"), "passed through with the node's backing file")
    }

    func testReaderLastUsedIsStampedAtOpen() throws {
        let m = fixture.mountpoint
        let start = UInt64(Date().timeIntervalSince1970)
        XCTAssertLessThan(numberAttr(m + "/other", "last_used") ?? .max, start, "last used long ago")
        let reader = try openPassedThrough("other")
        defer { close(reader) }
        XCTAssertGreaterThanOrEqual(numberAttr(m + "/other", "last_used") ?? 0, start, "used now")
        // A small file, read through the daemon, too.
        XCTAssertLessThan(numberAttr(m + "/small-other", "last_used") ?? .max, start, "last used long ago")
        let small = open(m + "/small-other", O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(small, 0)
        defer { close(small) }
        XCTAssertFalse(try readsBypassDaemon(small, "small-other"), "not passed through")
        XCTAssertGreaterThanOrEqual(numberAttr(m + "/small-other", "last_used") ?? 0, start, "used now")
    }

    /// A passed-through file may be a linked clone's source (its backing
    /// file stays its own), never its destination; a writer the kernel
    /// serves with shared data's backing file never maps the shared data.
    func testLinkedCloneOfAPassedThroughFileNeverMixesData() throws {
        let m = fixture.mountpoint
        let source = try openPassedThrough("data")
        defer { close(source) }
        try copy("data", to: "copy")
        XCTAssertGreaterThan(numberAttr(m, "clone_savings") ?? 0, 0, "a linked clone of a passed-through source")
        let copyReader = open(m + "/copy", O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(copyReader, 0)
        defer { close(copyReader) }
        // The source's writer: its shared mapping stores into the source's data only.
        let writer = openForWriting(m + "/data", O_RDWR)
        guard writer >= 0 else { return XCTFail("open the source for writing: \(Errno.name(-writer))") }
        let shared = mmap(nil, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, writer, 0)
        guard shared != MAP_FAILED, let shared else { close(writer); return XCTFail("mmap MAP_SHARED: \(Errno.name(errno))") }
        shared.copyMemory(from: "AAAA", byteCount: 4)
        XCTAssertEqual(msync(shared, 4096, MS_SYNC), 0)
        munmap(shared, 4096)
        close(writer)
        XCTAssertEqual(Array(readWhole(source).prefix(4)), Array("AAAA".utf8))
        XCTAssertEqual(readWhole(copyReader), data, "the clone's reader never reads the source's stores")
        XCTAssertEqual(readBytes(m + "/copy"), data)
        // A clone made while such a writer is open is a copy.
        let savings = numberAttr(m, "clone_savings")
        let openWriter = openForWriting(m + "/data", O_RDWR)
        guard openWriter >= 0 else { return XCTFail("open the source for writing: \(Errno.name(-openWriter))") }
        try copy("data", to: "second")
        close(openWriter)
        XCTAssertEqual(numberAttr(m, "clone_savings"), savings, "copied, not a linked clone")
        // Onto a passed-through file: copied, and its reader reads what was copied there.
        let destination = try openPassedThrough("other")
        defer { close(destination) }
        try copy("data", to: "other")
        XCTAssertEqual(numberAttr(m, "clone_savings"), savings, "copied, not a linked clone")
        XCTAssertEqual(readWhole(destination), readBytes(m + "/data"))
    }

    func testLinkedCloneIsServedByTheDaemon() throws {
        let m = fixture.mountpoint
        try copy("data", to: "clone")
        XCTAssertGreaterThan(numberAttr(m, "clone_savings") ?? 0, 0, "cp made a linked clone")
        let reader = open(m + "/clone", O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(reader, 0)
        defer { close(reader) }
        XCTAssertEqual(readWhole(reader), data)
        // A writer opens it, and the clone breaks away.
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
        let other = try openPassedThrough("Library/Caches/cached")
        defer { close(other) }
    }

    func testPurgeWaitsForThePassedThroughReader() throws {
        let m = fixture.mountpoint
        let reader = open(m + "/Library/Caches/cached", O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(reader, 0)
        XCTAssertTrue(try readsBypassDaemon(reader, "Library/Caches/cached"), "passed through")
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

/// `passthrough=off`: readers go through the daemon, and a writer opens a
/// file a reader holds open, as natively.
final class PassthroughOffTests: PassthroughTestCase {
    override var mountOptions: [String] { ["passthrough=off"] }

    func testWriterOpensWhileReaderIsOpen() throws {
        let path = fixture.mountpoint + "/data"
        let reader = open(path, O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(reader, 0)
        defer { close(reader) }
        XCTAssertEqual(readWhole(reader), data)
        XCTAssertFalse(try readsBypassDaemon(reader, "data"), "served by the daemon")
        let writer = openForWriting(path)
        guard writer >= 0 else { return XCTFail("open for writing while a reader is open: \(Errno.name(-writer))") }
        close(writer)
    }
}
