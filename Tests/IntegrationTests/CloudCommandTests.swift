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
        try assertRejected(["evict", mnt + "/Documents/new.txt"], status: 1, mentioning: ["open, or not uploaded"])
        try assertRejected(["evict"], status: 64, mentioning: ["PATH"])
        XCTAssertEqual(try purgefs("evict", "--help").status, 0)
        XCTAssertEqual(try purgefs("download", "--help").status, 0)
    }
}
