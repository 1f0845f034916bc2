import PurgeCore
@testable import PurgeEngines
import PurgeSys
import XCTest
@testable import PurgeCommand

final class UsageReportTests: XCTestCase {
    private let fake = FakeAttributes([
        "/m": FakeAttributes.root(size: 1000, files: 10, purgeable: 300, capacity: 10_000, external: 2000, available: 7000),
        "/m/Documents": FakeAttributes.directory(size: 400),
        "/m/Documents/a": FakeAttributes.directory(size: 100),
        "/m/caches": FakeAttributes.directory(size: 250, purgeable: 200),
        "/m/tmp": FakeAttributes.directory(size: 150, purgeable: 100),
        "/m/tmp/x": FakeAttributes.directory(size: 50, purgeable: 40),
        "/m/Library": FakeAttributes.directory(size: 60),
        "/m/Library/Caches": FakeAttributes.directory(size: 30, purgeable: 30),
        "/m/file": ["size": "5", "allocated": "8", "purgeable": "0"],
    ])

    private func report(_ relative: String, symlinks: Set<String> = []) throws -> UsageReport {
        let path = relative.isEmpty ? "/m" : "/m/" + relative
        return try UsageReport.read(path: path, mountpoint: "/m", relative: relative, fake.access,
                                    isDirectory: { !symlinks.contains($0) })
    }

    func testRootBreakdown() throws {
        let report = try report("")
        XCTAssertEqual(report.documents, 400)
        XCTAssertEqual(report.zones, [.init(path: "Library/Caches", size: 30, purgeable: 30), .init(path: "caches", size: 250, purgeable: 200),
                                      .init(path: "tmp", size: 150, purgeable: 100)])
        XCTAssertEqual(report.caches, 430)
        XCTAssertEqual(report.cachesPurgeable, 330)
        XCTAssertEqual(report.otherData, 1000 - 400 - 430)
        XCTAssertNil(report.app)
        XCTAssertEqual(report.device.deviceUsed, 3000)
        XCTAssertEqual(report.device.containerUsed, 1000)
        XCTAssertEqual(report.json["size"], .integer(UInt64(1000)))
        XCTAssertEqual(report.json["app"], .null)
        XCTAssertEqual(report.json["device"]?["available_important"], .integer(UInt64(7300)))
        XCTAssertEqual(report.json["device"]?["device_used"], .integer(UInt64(3000)))
        XCTAssertEqual(report.json["device"]?["container_used"], .integer(UInt64(1000)))
        XCTAssertNil(report.json["device"]?["used"], "no figure is called just used")
        let text = report.text
        for expected in ["Storage of /m\n", "App ", "not set", "Documents ", "400 B", "  caches ", "250 B (200 B purgeable)",
                         "Other data", "170 B", "Total", "1000 B in 10 files", "Available for important use", "7.1 KiB"] {
            XCTAssertTrue(text.contains(expected), "\(expected) in\n\(text)")
        }
        let barLine = try XCTUnwrap(text.split(separator: "\n").first { $0.hasPrefix("[") })
        XCTAssertEqual(barLine.count, StorageBar.defaultWidth + 2)
        for line in text.split(separator: "\n") { XCTAssertLessThanOrEqual(line.count, 80, String(line)) }
    }

    /// The Not flat row shows only when files of the mount share data
    /// through purgefs (the root's not_flat), for a subtree too.
    func testNotFlatFilesAreShownOnlyWhenThereAreAny() throws {
        XCTAssertEqual(try report("").notFlat, 0)
        XCTAssertFalse(try report("").text.contains("Not flat"))
        XCTAssertEqual(try report("").json["not_flat"], .integer(UInt64(0)))
        fake.values["/m"]?["not_flat"] = "2"
        for relative in ["", "Documents"] {
            let shown = try report(relative)
            XCTAssertTrue(shown.text.contains("Not flat") && shown.text.contains("2 files share data through purgefs (purgefs flatten)"), shown.text)
            XCTAssertEqual(shown.json["not_flat"], .integer(UInt64(2)))
            for line in shown.text.split(separator: "\n") { XCTAssertLessThanOrEqual(line.count, 80, String(line)) }
        }
    }

    func testSubtreeInsideAZoneIsAllCaches() throws {
        let report = try report("tmp/x")
        XCTAssertEqual(report.documents, 0)
        XCTAssertEqual(report.zones, [.init(path: "tmp", size: 50, purgeable: 40)])
        XCTAssertEqual(report.otherData, 0)
        XCTAssertTrue(report.text.contains("Storage of /m/tmp/x (in the purgefs mount at /m)"))
    }

    func testSubtreeAroundAZone() throws {
        let report = try report("Library")
        XCTAssertEqual(report.zones, [.init(path: "Library/Caches", size: 30, purgeable: 30)])
        XCTAssertEqual(report.otherData, 30)
        XCTAssertEqual(try self.report("Documents/a").documents, 100)
    }

    func testCategoriesBehindSymlinksAreNotRead() throws {
        let report = try report("", symlinks: ["/m/Documents", "/m/caches"])
        XCTAssertEqual(report.documents, 0)
        XCTAssertEqual(report.zones.map(\.path), ["Library/Caches", "tmp"])
    }

    func testAFileIsRefused() {
        XCTAssertThrowsError(try report("file")) {
            XCTAssertEqual($0 as? CommandExit, .failure("/m/file is not a directory (usage shows a directory's breakdown)"))
        }
    }

    func testOverlap() {
        XCTAssertEqual(UsageReport.overlap(of: "Library/Caches", with: ""), .inside)
        XCTAssertEqual(UsageReport.overlap(of: "Library/Caches", with: "Library"), .inside)
        XCTAssertEqual(UsageReport.overlap(of: "Library/Caches", with: "Library/Caches/x"), .around)
        XCTAssertEqual(UsageReport.overlap(of: "caches", with: "caches"), .inside)
        XCTAssertEqual(UsageReport.overlap(of: "caches", with: "cachesX"), .apart)
        XCTAssertEqual(UsageReport.overlap(of: "tmp", with: "Documents"), .apart)
    }
}
