import Foundation
import Glibc
import PurgeSys
import XCTest

/// `purgefs purge`, `pin`, `unpin` and `log` on a mount.
final class ManualPurgeCommandTests: PurgefsCommandTestCase {
    func testPurgeAllEmptiesTheZonesAndLogsEachFile() throws {
        let output = try succeed("purge", mnt, "--all")
        XCTAssertTrue(output.hasPrefix("Purged 5 files"), output)
        for path in Self.purgeablePaths { XCTAssertFalse(exists(mnt + "/" + path), path) }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: mnt + "/caches"), [], "directories stay, empty")
        XCTAssertTrue(exists(mnt + "/Documents/report.txt"))
        XCTAssertTrue(exists(mnt + "/other/o.txt"))
        XCTAssertEqual(try attribute("purged_files", of: mnt), 5)
        XCTAssertEqual(try attribute("purgeable", of: mnt), 0)

        let lines = try succeed("log", mnt, "--json").split(separator: "\n")
        XCTAssertEqual(lines.count, 5)
        var paths: [String] = []
        for line in lines {
            let entry = try object(String(line))
            XCTAssertEqual(Set(entry.keys), ["time", "path", "bytes", "size", "last_used", "reason", "action"])
            XCTAssertEqual(entry["reason"] as? String, "manual")
            XCTAssertEqual(entry["action"] as? String, "delete")
            paths.append(try XCTUnwrap(entry["path"] as? String))
        }
        XCTAssertEqual(Set(paths), Set(Self.purgeablePaths))

        let table = try succeed("log", mnt)
        XCTAssertTrue(table.hasPrefix("TIME "), table)
        XCTAssertTrue(table.contains("manual"), table)
        XCTAssertTrue(table.contains("caches/a.bin"), table)
        XCTAssertTrue(table.contains("8 KiB"), table)
        XCTAssertTrue(table.hasSuffix("5 files purged, 32 KiB freed.\n"), table)

        let again = try succeed("purge", mnt, "--all")
        XCTAssertTrue(again.hasPrefix("Nothing was purged"), again)
    }

    /// A cache file whose data a hard link outside the container keeps:
    /// its name is purged, but no space is freed, so the log says bytes 0
    /// and the links left, and purged_bytes does not count it.
    func testAPurgedFileLinkedElsewhereIsLoggedAsNotFreed() throws {
        let outside = fixture.base + "/kept-a.bin"
        XCTAssertEqual(link(fixture.container + "/caches/a.bin", outside), 0)
        let output = try succeed("purge", mnt, "--all")
        XCTAssertTrue(output.hasPrefix("Purged 5 files"), output)
        XCTAssertFalse(exists(mnt + "/caches/a.bin"))
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: outside)[.size] as? Int, 8192, "the data stays")

        var entries: [String: [String: Any]] = [:]
        for line in try succeed("log", mnt, "--json").split(separator: "\n") {
            let entry = try object(String(line))
            entries[try XCTUnwrap(entry["path"] as? String)] = entry
        }
        XCTAssertEqual(Set(entries.keys), Set(Self.purgeablePaths))
        XCTAssertEqual(entries["caches/a.bin"]?["bytes"] as? Int, 0, "nothing freed: \(entries["caches/a.bin"] ?? [:])")
        XCTAssertEqual(entries["caches/a.bin"]?["links_left"] as? Int, 1)
        XCTAssertGreaterThan(entries["caches/b.bin"]?["bytes"] as? Int ?? 0, 0)
        XCTAssertNil(entries["caches/b.bin"]?["links_left"])
        let logged = entries.values.reduce(0) { $0 + ($1["bytes"] as? Int ?? 0) }
        XCTAssertEqual(try attribute("purged_bytes", of: mnt), UInt64(logged), "the total is what the log says was freed")
        XCTAssertEqual(try attribute("purged_files", of: mnt), 5)
    }

    func testPurgeBytesPurgesAtLeastThatMuch() throws {
        let output = try succeed("purge", mnt, "--bytes", "1")
        XCTAssertTrue(output.hasPrefix("Purged 1 file,"), output)
        XCTAssertEqual(try attribute("purged_files", of: mnt), 1)
        XCTAssertEqual(Self.purgeablePaths.filter { exists(mnt + "/" + $0) }.count, 4)
        XCTAssertEqual(try succeed("log", mnt, "--json").split(separator: "\n").count, 1)
    }

    func testPinnedFilesAndDirectoriesSurvivePurgeAll() throws {
        XCTAssertTrue(try succeed("pin", mnt + "/caches/a.bin").hasPrefix("Pinned \(mnt)/caches/a.bin"))
        try succeed("pin", mnt + "/Library/Caches")
        XCTAssertEqual(try Paths.extendedAttribute("user.purgefs.pinned", of: mnt + "/caches/a.bin"), Array("1".utf8))
        let output = try succeed("purge", mnt, "--all")
        XCTAssertTrue(output.hasPrefix("Purged 3 files"), output)
        XCTAssertTrue(exists(mnt + "/caches/a.bin"))
        XCTAssertTrue(exists(mnt + "/Library/Caches/x.bin"))
        XCTAssertFalse(exists(mnt + "/caches/b.bin"))

        try succeed("unpin", mnt + "/caches/a.bin")
        XCTAssertEqual(try Paths.extendedAttribute("user.purgefs.pinned", of: mnt + "/caches/a.bin"), Array("0".utf8))
        try succeed("purge", mnt, "--all")
        XCTAssertFalse(exists(mnt + "/caches/a.bin"))
        XCTAssertTrue(exists(mnt + "/Library/Caches/x.bin"), "still pinned through its directory")
    }

    func testPinRefusesPathsOutsideTheMount() throws {
        try assertRejected(["pin", fixture.container + "/caches/a.bin"], status: 1, mentioning: ["not inside a purgefs mount"])
        try assertRejected(["pin", mnt + "/caches/missing"], status: 1, mentioning: ["No such file"])
        try assertRejected(["pin", mnt + "/caches/a.bin", "--recursive"], status: 64, mentioning: ["--recursive"])
        try assertRejected(["purge", mnt + "/caches", "--all"], status: 1, mentioning: ["give the mount point"])
        XCTAssertEqual(try attribute("purged_files", of: mnt), 0)
    }

    func testEmptyLog() throws {
        XCTAssertEqual(try succeed("log", mnt), "Nothing has been purged yet.\n")
        XCTAssertEqual(try succeed("log", mnt, "--json"), "")
    }
}
