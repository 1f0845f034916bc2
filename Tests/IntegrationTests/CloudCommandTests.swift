import Foundation
import Glibc
import XCTest

/// `purgefs evict` and `purgefs download` on a mount with a cloud remote.
final class CloudCommandTests: PurgefsCommandTestCase {
    var remote: String { fixture.base + "/remote" }
    override var mountOptions: [String] { ["capacity=64M", "cloud=" + remote] }

    override func prepareContainer() throws {
        try super.prepareContainer()
        XCTAssertEqual(mkdir(remote, 0o755), 0)
    }

    func testEvictThenDownloadThroughTheCommands() throws {
        let doc = mnt + "/Documents/report.txt"
        XCTAssertTrue(eventually(timeout: 15) { getAttr(doc, pf("uploaded")) == .value("1") }, "uploaded at mount")
        let evicted = try succeed("evict", doc)
        XCTAssertTrue(evicted.contains("Evicted"), evicted)
        XCTAssertEqual(try attribute("allocated", of: doc), 0)
        XCTAssertEqual(getAttr(doc, pf("download_status")), .value("not_downloaded"))
        let log = try succeed("log", mnt)
        XCTAssertTrue(log.contains("evict") && log.contains("Documents/report.txt"), log)
        XCTAssertTrue(log.contains("1 evicted"), log)

        let started = try succeed("download", doc)
        XCTAssertTrue(started.contains("Downloading"), started)
        XCTAssertTrue(eventually(timeout: 10) { getAttr(doc, pf("download_status")) == .value("current") })
        XCTAssertEqual(readBytes(doc), [UInt8](repeating: 0x61, count: 20_000))
    }

    func testEvictRefusesWithOneClearLine() throws {
        try assertRejected(["evict", mnt + "/other/o.txt"], status: 1, mentioning: ["ubiquitous zone"])
        let fd = open(mnt + "/Documents/new.txt", O_WRONLY | O_CREAT, 0o644)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        try assertRejected(["evict", mnt + "/Documents/new.txt"], status: 1, mentioning: ["it is not uploaded yet"])
        try assertRejected(["evict"], status: 64, mentioning: ["PATH"])
        XCTAssertEqual(try purgefs("evict", "--help").status, 0)
        XCTAssertEqual(try purgefs("download", "--help").status, 0)
    }

    /// Every refusal names its own cause (issue 12, item 7), the same one
    /// `user.purgefs.evictable` reads.
    func testEvictNamesTheRealReason() throws {
        let doc = mnt + "/Documents/report.txt"
        XCTAssertTrue(eventually(timeout: 15) { getAttr(doc, pf("uploaded")) == .value("1") }, "uploaded at mount")
        XCTAssertEqual(getAttr(doc, pf("evictable")), .value("1"))

        let reader = open(doc, O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(reader, 0)
        XCTAssertEqual(getAttr(doc, pf("evictable")), .value("open"))
        try assertRejected(["evict", doc], status: 1, mentioning: ["cannot be evicted now: it is open"])
        close(reader)

        let writer = open(doc, O_WRONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(writer, 0)
        XCTAssertEqual(pwrite(writer, "b", 1, 0), 1)
        XCTAssertEqual(getAttr(doc, pf("evictable")), .value("changed"))
        try assertRejected(["evict", doc], status: 1, mentioning: ["cannot be evicted now: it changed since its upload"])
        close(writer)

        // A clone made outside the zone, its original then moved in: uploaded and closed, but shared.
        let original = mnt + "/other/shared.bin", clone = mnt + "/other/clone.bin", shared = mnt + "/Documents/shared.bin"
        XCTAssertEqual(writeBytes(original, tiled(64 * 1024, seed: 7)), 0)
        try succeed("clone", original, clone)
        XCTAssertEqual(getAttr(original, pf("content_id")), getAttr(clone, pf("content_id")), "a clone, sharing data")
        XCTAssertEqual(rename(original, shared), 0)
        XCTAssertTrue(eventually(timeout: 15) { getAttr(shared, pf("uploaded")) == .value("1") }, "the moved original is uploaded")
        XCTAssertEqual(getAttr(shared, pf("evictable")), .value("shared"))
        try assertRejected(["evict", shared], status: 1, mentioning: ["cannot be evicted now: its clones share its data"])
        XCTAssertEqual(readBytes(clone), tiled(64 * 1024, seed: 7), "the clone keeps its data")

        XCTAssertTrue(eventually(timeout: 15) { getAttr(doc, pf("evictable")) == .value("1") }, "uploaded again once closed")
        try succeed("evict", doc)
        XCTAssertEqual(getAttr(doc, pf("evictable")), .value("evicted"))

        try assertRejected(["evict", mnt + "/other/o.txt"], status: 1, mentioning: ["it is not in a ubiquitous zone"])
        try assertRejected(["evict", mnt + "/Documents"], status: 1, mentioning: ["it is not a regular file"])
    }
}
