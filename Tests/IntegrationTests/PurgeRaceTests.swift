import Foundation
import Glibc
import Synchronization
import XCTest

/// Renames racing with a purge: once a directory has been moved out of its
/// zone, nothing in it may be deleted.
final class PurgeRaceTests: PurgeTestCase {
    static let rounds = 3
    static let filesPerDirectory = 3000
    override var mountOptions: [String] { ["capacity=1G"] }

    override func prepareContainer() throws {
        makeDirectories(fixture.container, ["caches", "Documents"])
        for round in 0..<Self.rounds {
            let dir = fixture.container + "/caches/d\(round)"
            XCTAssertEqual(mkdir(dir, 0o755), 0)
            for i in 0..<Self.filesPerDirectory {
                let fd = open(dir + "/f\(i)", O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
                XCTAssertEqual(write(fd, "x", 1), 1)
                close(fd)
            }
        }
    }

    func firstEntry(_ path: String) -> String {
        guard let dir = opendir(path) else { return "" }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != ".", name != ".." { return name }
        }
        return ""
    }

    func names(_ path: String) -> Set<String> {
        Set((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [])
    }

    func testDirectoryMovedOutOfAZoneDuringAPurgeKeepsItsFiles() throws {
        let m = fixture.mountpoint
        for round in 0..<Self.rounds {
            XCTAssertEqual(setAttr(m + "/caches/d\(round)", pf("pinned"), "1"), 0)
        }
        var lost: [String] = []
        for round in 0..<Self.rounds {
            let dir = "d\(round)"
            XCTAssertEqual(setAttr(m + "/caches/" + dir, pf("pinned"), "0"), 0)
            // The purger unlinks in the backing directory's readdir order: watch the first name.
            let first = firstEntry(fixture.container + "/caches/" + dir)
            let done = DispatchSemaphore(value: 0)
            let mountpoint = m
            Thread.detachNewThread {
                _ = setAttr(mountpoint, pf("purge"), "all")
                done.signal()
            }
            // As soon as the purge has started on this directory, move it out of the zone.
            let watched = fixture.container + "/caches/\(dir)/" + first
            var st = stat()
            let deadline = Date().addingTimeInterval(20)
            while lstat(watched, &st) == 0, Date() < deadline {}
            let started = lstat(watched, &st) != 0
            XCTAssertTrue(started, "the purge started")
            XCTAssertEqual(rename(m + "/caches/" + dir, m + "/Documents/" + dir), 0, "rename: \(Errno.name(errno))")
            let afterRename = names(fixture.container + "/Documents/" + dir)
            XCTAssertEqual(done.wait(timeout: .now() + 60), .success, "the purge finished")
            let now = names(fixture.container + "/Documents/" + dir)
            let missing = afterRename.subtracting(now)
            if !missing.isEmpty {
                lost.append("round \(round): \(missing.count) of the \(afterRename.count) files in Documents/\(dir) right after the rename were deleted afterwards")
            }
            // The moved directory is out of the zone: a purge now leaves it alone.
            XCTAssertEqual(setAttr(m, pf("purge"), "all"), 0)
            XCTAssertEqual(names(fixture.container + "/Documents/" + dir), now, "a purge after the move leaves Documents/\(dir) alone")
        }
        XCTAssertTrue(lost.isEmpty, "files deleted outside a zone after their directory left it:\n  " + lost.joined(separator: "\n  "))
        let outside = readPurgeLog(fixture.container).filter { $0.path.hasPrefix("Documents/") }
        XCTAssertEqual(outside.count, 0, "purge log lines with a path outside the zones (files deleted while in caches/ are logged under the name their directory got later): \(outside.prefix(5).map(\.path))")
        // And the accounting still equals the walk.
        let walk = BackingWalk(fixture.container)
        for directory in ["", "caches", "Documents"] {
            XCTAssertEqual(mountTotals(directory.isEmpty ? m : m + "/" + directory),
                           walk.totals(of: directory, zones: AccountingTests.zones), "/\(directory) vs the walk")
        }
    }
}
