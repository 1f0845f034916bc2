import Foundation
import Glibc
import PurgeSys
import XCTest

/// `user.purgefs.excluded_from_backup`: a flag like `pinned`, kept by
/// identity across remounts, that purging ignores and `usage` shows.
final class ExcludedFromBackupTests: PurgefsCommandTestCase {
    func flag(_ path: String) throws -> String {
        String(decoding: try Paths.extendedAttribute("user.purgefs.excluded_from_backup", of: path), as: UTF8.self)
    }

    func set(_ path: String, _ value: String) throws {
        try Paths.setExtendedAttribute("user.purgefs.excluded_from_backup", of: path, to: Array(value.utf8))
    }

    func testTheFlagIsKeptAcrossARemountFollowsARenameAndUsageShowsIt() throws {
        let report = mnt + "/Documents/report.txt", cache = mnt + "/caches/a.bin"
        XCTAssertEqual(try flag(report), "0")
        try set(report, "1")
        try set(mnt + "/Documents", "1")
        try set(cache, "1")
        XCTAssertEqual(try flag(report), "1")
        XCTAssertThrowsError(try set(report, "2")) { XCTAssertEqual(($0 as? PurgeSys.Errno)?.rawValue, EINVAL) }
        XCTAssertEqual(try object(try succeed("usage", mnt + "/Documents", "--json"))["excluded_from_backup"] as? Bool, true)
        XCTAssertEqual(try object(try succeed("usage", mnt, "--json"))["excluded_from_backup"] as? Bool, false)
        XCTAssertTrue(try succeed("usage", mnt + "/Documents").contains("Backup"))

        // Purging ignores it: an excluded cache is purged like any other.
        try succeed("purge", mnt, "--all")
        XCTAssertFalse(exists(cache))

        XCTAssertEqual(fixture.unmount(), [])
        try fixture.mount(options: mountOptions)
        XCTAssertEqual(try flag(report), "1", "kept across a remount")
        try FileManager.default.moveItem(atPath: report, toPath: mnt + "/Documents/renamed.txt")
        XCTAssertEqual(try flag(mnt + "/Documents/renamed.txt"), "1", "it is the file's, whatever its name")
        try set(mnt + "/Documents/renamed.txt", "0")
        XCTAssertEqual(try flag(mnt + "/Documents/renamed.txt"), "0")
        // A new file never inherits a deleted one's flag.
        try FileManager.default.removeItem(atPath: mnt + "/Documents/renamed.txt")
        XCTAssertTrue(FileManager.default.createFile(atPath: mnt + "/Documents/fresh.txt", contents: Data("x".utf8)))
        XCTAssertEqual(try flag(mnt + "/Documents/fresh.txt"), "0")
        XCTAssertTrue(try succeed("help", "attributes").contains("excluded_from_backup"))
    }
}
