import Foundation
import Glibc
import XCTest

/// `purgefs clone` on the reflink backend: a clone, atomically, refusing an
/// existing DEST (EEXIST) and another mount (EXDEV); leftovers of an
/// interrupted clone are removed at the next mount.
final class CloneCommandTests: ReflinkTestCase {
    override func prepareContainer() throws {
        try FileManager.default.createDirectory(atPath: container + "/caches", withIntermediateDirectories: true)
        try writeRandom(container + "/big", count: 8 << 20)
        XCTAssertEqual(chmod(container + "/big", 0o640), 0)
    }

    func clone(_ source: String, _ destination: String) throws -> CommandResult {
        try Subprocess.run([fixture.binary, "clone", source, destination], timeout: 30)
    }

    func testCloneCommand() throws {
        let before = backingFree()
        let made = try clone(m + "/big", m + "/caches/c")
        XCTAssertEqual(made.status, 0, "\(made)")
        XCTAssertLessThan(Int64(before) - Int64(backingFree()), 1 << 20)
        XCTAssertTrue(sameContent(m + "/big", m + "/caches/c"))
        var status = stat()
        XCTAssertEqual(stat(m + "/caches/c", &status), 0)
        XCTAssertEqual(status.st_mode & 0o7777, 0o640)
        XCTAssertEqual(getAttr(m + "/big", pf("content_id")), getAttr(m + "/caches/c", pf("content_id")))
        XCTAssertEqual(numberAttr(m + "/caches/c", "shared"), 8 << 20)
        assertAccounting("after purgefs clone")

        let again = try clone(m + "/big", m + "/caches/c")
        XCTAssertEqual(again.status, 1)
        XCTAssertTrue(again.stderr.contains("File exists"), again.stderr)

        let outside = fixture.base + "/outside"
        let elsewhere = try clone(m + "/big", outside)
        XCTAssertEqual(elsewhere.status, 1)
        XCTAssertTrue(elsewhere.stderr.contains("Invalid cross-device link"), elsewhere.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: outside))

        let names = try FileManager.default.contentsOfDirectory(atPath: m + "/caches")
        XCTAssertEqual(names, ["c"], "no temporary name is left")
    }

    func testLeftoversOfAnInterruptedCloneAreRemovedAtMount() throws {
        XCTAssertTrue(FileManager.default.createFile(atPath: m + "/caches/.purgefs-clone.abc", contents: Data([1, 2, 3])))
        XCTAssertEqual(unmountPurgefs(), [])
        try mountPurgefs()
        XCTAssertFalse(FileManager.default.fileExists(atPath: m + "/caches/.purgefs-clone.abc"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: container + "/caches/.purgefs-clone.abc"))
        assertAccounting("after removing a leftover")
    }
}
