import Foundation
import Glibc
import XCTest

/// Clones in a ubiquitous zone (the container's ext4: linked clones): `cp`
/// of a document is a clone there too; the cloud tier uploads each name's
/// content under its own path, before and after either side's first write;
/// evicting a clone whose data the original still reads leaves that data
/// to it (freeing nothing) and the clone downloads as any document; the
/// last of them evicted frees the data.
final class CloudCloneTests: CloudTestCase {
    static let size = 1 * MiB + 123

    override func prepareContainer() throws {
        try super.prepareContainer()
        makeDirectories(fixture.container, ["Documents"])
        XCTAssertEqual(mkdir(remote, 0o755), 0)
    }

    private var m: String { fixture.mountpoint }

    private func cp(_ from: String, _ to: String, file: StaticString = #filePath, line: UInt = #line) {
        let result = try? Subprocess.run(["cp", m + "/" + from, m + "/" + to], timeout: 60)
        XCTAssertEqual(result?.status, 0, "cp \(from) \(to): \(String(describing: result))", file: file, line: line)
    }

    /// An uploaded document and an uploaded clone of it: the bytes they hold.
    private func uploadedClone(seed: UInt64) -> [UInt8] {
        let bytes = tiled(Self.size, seed: seed)
        XCTAssertEqual(writeBytes(m + "/Documents/report.bin", bytes), 0)
        waitUploaded(m + "/Documents/report.bin")
        cp("Documents/report.bin", "Documents/copy.bin")
        waitUploaded(m + "/Documents/copy.bin")
        return bytes
    }

    private func overwrite(_ relative: String, _ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
        let fd = open(m + "/" + relative, O_WRONLY)
        XCTAssertGreaterThanOrEqual(fd, 0, "open \(relative): errno \(errno)", file: file, line: line)
        XCTAssertEqual(bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }, bytes.count, file: file, line: line)
        XCTAssertEqual(close(fd), 0, file: file, line: line)
    }

    func testACopyOfADocumentIsACloneAndEachNameIsUploadedWithItsOwnContent() throws {
        try fixture.mount(options: cloudOptions())
        let bytes = uploadedClone(seed: 11)
        let blocks = UInt64(backingBlocks("Documents/report.bin"))
        XCTAssertGreaterThanOrEqual(blocks, UInt64(Self.size))
        XCTAssertEqual(numberAttr(m, "clone_savings"), blocks, "cp in a ubiquitous zone makes a clone")
        XCTAssertEqual(numberAttr(m + "/Documents/copy.bin", "shared"), blocks)
        XCTAssertEqual(getAttr(m + "/Documents/copy.bin", pf("ubiquitous")), .value("1"))
        XCTAssertTrue(remoteCopy("Documents/report.bin") == bytes, "the original's remote copy")
        XCTAssertTrue(remoteCopy("Documents/copy.bin") == bytes, "the clone's remote copy, read through it while shared")

        // The clone's first write gives it data of its own: its upload has it, the original's is unchanged.
        var changedCopy = bytes
        changedCopy.replaceSubrange(0..<5, with: Array("clone".utf8))
        overwrite("Documents/copy.bin", Array("clone".utf8))
        XCTAssertTrue(eventually(timeout: 15) { remoteCopy("Documents/copy.bin") == changedCopy }, "the clone's new content is uploaded")
        waitUploaded(m + "/Documents/copy.bin")
        XCTAssertTrue(remoteCopy("Documents/report.bin") == bytes)
        XCTAssertTrue(readBytes(m + "/Documents/report.bin") == bytes)

        // Another clone, then the original's first write: each name keeps its own content, here and remotely.
        cp("Documents/report.bin", "Documents/again.bin")
        waitUploaded(m + "/Documents/again.bin")
        // Plus what the written clone still shares of its blocks (block sharing; 0 once copied whole).
        XCTAssertEqual(numberAttr(m, "clone_savings"), blocks + (numberAttr(m + "/Documents/copy.bin", "shared") ?? 0))
        var changedOriginal = bytes
        changedOriginal.replaceSubrange(0..<8, with: Array("original".utf8))
        overwrite("Documents/report.bin", Array("original".utf8))
        XCTAssertTrue(eventually(timeout: 15) { remoteCopy("Documents/report.bin") == changedOriginal }, "the original's new content is uploaded")
        waitUploaded(m + "/Documents/report.bin")
        waitUploaded(m + "/Documents/again.bin")
        XCTAssertTrue(remoteCopy("Documents/again.bin") == bytes, "the clone's remote copy keeps the content it had")
        XCTAssertTrue(readBytes(m + "/Documents/again.bin") == bytes)
        XCTAssertTrue(readBytes(m + "/Documents/copy.bin") == changedCopy)
    }

    func testEvictingACloneLeavesTheDataToTheOriginalAndFreesNothing() throws {
        try fixture.mount(options: cloudOptions())
        let bytes = uploadedClone(seed: 12)
        let blocks = UInt64(backingBlocks("Documents/report.bin"))
        XCTAssertEqual(getAttr(m + "/Documents/copy.bin", pf("evictable")), .value("1"))
        XCTAssertEqual(getAttr(m + "/Documents/report.bin", pf("evictable")), .value("shared"),
                       "the original cannot leave the data its clone reads without a copy")
        XCTAssertEqual(setAttr(m + "/Documents/report.bin", pf("evict"), "1"), EBUSY)
        let rootAllocated = numberAttr(m, "allocated") ?? 0
        XCTAssertEqual(numberAttr(m + "/Documents/copy.bin", "allocated"), 0, "the original is charged the shared data")

        XCTAssertEqual(setAttr(m + "/Documents/copy.bin", pf("evict"), "1"), 0)
        XCTAssertEqual(getAttr(m + "/Documents/copy.bin", pf("download_status")), .value("not_downloaded"))
        XCTAssertEqual(getAttr(m + "/Documents/copy.bin", pf("uploaded")), .value("1"))
        XCTAssertEqual(getAttr(m + "/Documents/copy.bin", pf("evictable")), .value("evicted"))
        XCTAssertEqual(fileSize(m + "/Documents/copy.bin"), Int64(Self.size), "the placeholder has the document's size")
        XCTAssertEqual(backingBlocks("Documents/copy.bin"), 0)
        XCTAssertEqual(UInt64(backingBlocks("Documents/report.bin")), blocks, "the original keeps its data")
        XCTAssertEqual(numberAttr(m, "allocated"), rootAllocated, "evicting a clone whose data is shared frees nothing")
        XCTAssertEqual(numberAttr(m, "clone_savings"), 0)
        XCTAssertEqual(readPurgeLog(fixture.container).map { "\($0.reason) \($0.action) \($0.path) \($0.bytes)" },
                       ["manual evict Documents/copy.bin 0"])
        XCTAssertTrue(readBytes(m + "/Documents/report.bin") == bytes, "the original still reads its bytes")
        XCTAssertEqual(getAttr(m + "/Documents/report.bin", pf("evictable")), .value("1"), "the original shares nothing now")

        // Opening the clone downloads it.
        XCTAssertTrue(readBytes(m + "/Documents/copy.bin") == bytes, "the clone downloads its bytes")
        XCTAssertEqual(getAttr(m + "/Documents/copy.bin", pf("download_status")), .value("current"))
        XCTAssertTrue(readBytes(m + "/Documents/report.bin") == bytes)
    }

    /// With block sharing (`PURGEFS_BLOCK_SHARING=1`): a written clone shares
    /// the blocks it did not write; it uploads its own bytes (from a flat
    /// copy), its eviction frees its own blocks only and leaves the shared
    /// data to the original, and it downloads its bytes again.
    func testASparseCloneUploadsEvictsAndDownloadsItsOwnBytes() throws {
        let before = getenv("PURGEFS_BLOCK_SHARING").map { String(cString: $0) }
        setenv("PURGEFS_BLOCK_SHARING", "1", 1)
        defer { if let before { setenv("PURGEFS_BLOCK_SHARING", before, 1) } else { unsetenv("PURGEFS_BLOCK_SHARING") } }
        try fixture.mount(options: cloudOptions())
        let bytes = uploadedClone(seed: 17)
        var changed = bytes
        changed.replaceSubrange(0..<5, with: Array("clone".utf8))
        overwrite("Documents/copy.bin", Array("clone".utf8))
        XCTAssertEqual(getAttr(m + "/Documents/copy.bin", pf("flat")), .value("0"), "the written clone shares blocks")
        XCTAssertTrue(eventually(timeout: 15) { remoteCopy("Documents/copy.bin") == changed }, "the clone's bytes are uploaded, not its holes")
        waitUploaded(m + "/Documents/copy.bin")
        let own = UInt64(backingBlocks("Documents/copy.bin"))
        XCTAssertLessThan(own, UInt64(Self.size), "the clone holds its written block, not a copy")
        let rootAllocated = try XCTUnwrap(numberAttr(m, "allocated"))
        XCTAssertEqual(setAttr(m + "/Documents/copy.bin", pf("evict"), "1"), 0, "evict: \(Errno.name(errno))")
        XCTAssertEqual(getAttr(m + "/Documents/copy.bin", pf("download_status")), .value("not_downloaded"))
        XCTAssertEqual(backingBlocks("Documents/copy.bin"), 0)
        XCTAssertEqual(numberAttr(m, "allocated"), rootAllocated - own, "evicting the clone frees its own blocks")
        XCTAssertEqual(readPurgeLog(fixture.container).map { "\($0.action) \($0.path) \($0.bytes)" }, ["evict Documents/copy.bin \(own)"])
        XCTAssertTrue(readBytes(m + "/Documents/report.bin") == bytes, "the original still reads its bytes")
        XCTAssertTrue(readBytes(m + "/Documents/copy.bin") == changed, "the clone downloads its own bytes")
    }

    func testEvictingTheLastSharerFreesTheData() throws {
        try fixture.mount(options: cloudOptions())
        let bytes = uploadedClone(seed: 13)
        let blocks = UInt64(backingBlocks("Documents/report.bin"))
        let rootAllocated = numberAttr(m, "allocated") ?? 0
        XCTAssertEqual(setAttr(m + "/Documents/copy.bin", pf("evict"), "1"), 0)
        XCTAssertEqual(setAttr(m + "/Documents/report.bin", pf("evict"), "1"), 0)
        XCTAssertEqual(backingBlocks("Documents/report.bin"), 0)
        XCTAssertEqual(backingBlocks("Documents/copy.bin"), 0)
        XCTAssertEqual(numberAttr(m, "allocated"), rootAllocated - blocks, "the last sharer's eviction frees the data")
        XCTAssertEqual(readPurgeLog(fixture.container).map { "\($0.action) \($0.path) \($0.bytes)" },
                       ["evict Documents/copy.bin 0", "evict Documents/report.bin \(blocks)"])
        XCTAssertTrue(readBytes(m + "/Documents/copy.bin") == bytes)
        XCTAssertTrue(readBytes(m + "/Documents/report.bin") == bytes)
    }

    /// `optimize_storage` under pressure: the clone is evicted for nothing
    /// (its data shared), the original is refused while shared and evicted
    /// once it is the last, freeing the data; the monitor goes on until it
    /// has freed what it needs.
    func testTheMonitorEvictsTheCloneForNothingThenTheOriginalForItsData() throws {
        try fixture.mount(options: cloudOptions(["optimize_storage", "capacity=32M", "low=3M", "high=5M"]))
        let bytes = tiled(4 * MiB, seed: 15)
        XCTAssertEqual(writeBytes(m + "/Documents/report.bin", bytes), 0)
        waitUploaded(m + "/Documents/report.bin")
        cp("Documents/report.bin", "Documents/copy.bin")
        waitUploaded(m + "/Documents/copy.bin")
        let blocks = UInt64(backingBlocks("Documents/report.bin"))
        XCTAssertEqual(numberAttr(m, "clone_savings"), blocks)
        XCTAssertEqual(setAttr(m, pf("capacity"), "6M"), 0, "squeeze: 2 MiB available, below low")
        XCTAssertTrue(eventually(timeout: 15) {
            getAttr(m + "/Documents/report.bin", pf("download_status")) == .value("not_downloaded")
                && getAttr(m + "/Documents/copy.bin", pf("download_status")) == .value("not_downloaded")
        }, "both evicted; log: \(readPurgeLog(fixture.container).map { "\($0.action) \($0.path) \($0.bytes)" })")
        XCTAssertEqual(readPurgeLog(fixture.container).filter { $0.action == "evict" }.map { "\($0.reason) \($0.path) \($0.bytes)" },
                       ["monitor Documents/copy.bin 0", "monitor Documents/report.bin \(blocks)"])
        XCTAssertEqual(backingBlocks("Documents/report.bin"), 0)
        XCTAssertEqual(backingBlocks("Documents/copy.bin"), 0)
        XCTAssertTrue(readBytes(m + "/Documents/copy.bin") == bytes)
        XCTAssertTrue(readBytes(m + "/Documents/report.bin") == bytes)
    }

    /// A clone the walk at mount finds by its backing file (both names are
    /// links of it) is still uploaded and evicted as itself after a remount.
    func testAfterARemountTheCloneIsStillItsOwnDocument() throws {
        try fixture.mount(options: cloudOptions())
        let bytes = uploadedClone(seed: 14)
        XCTAssertEqual(fixture.unmount(), [])
        try fixture.mount(options: cloudOptions())
        XCTAssertTrue(eventually(timeout: 5) { getAttr(m + "/Documents/copy.bin", pf("evictable")) == .value("1") },
                      "evictable: \(getAttr(m + "/Documents/copy.bin", pf("evictable")))")
        XCTAssertEqual(getAttr(m + "/Documents/copy.bin", pf("uploaded")), .value("1"))
        XCTAssertEqual(getAttr(m + "/Documents/report.bin", pf("uploaded")), .value("1"))
        XCTAssertEqual(numberAttr(m, "clone_savings"), UInt64(backingBlocks("Documents/report.bin")))
        XCTAssertEqual(setAttr(m + "/Documents/copy.bin", pf("evict"), "1"), 0)
        XCTAssertEqual(getAttr(m + "/Documents/copy.bin", pf("download_status")), .value("not_downloaded"))
        XCTAssertTrue(readBytes(m + "/Documents/report.bin") == bytes)
        XCTAssertTrue(readBytes(m + "/Documents/copy.bin") == bytes)
    }
}
