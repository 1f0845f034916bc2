import Foundation
import Glibc
import XCTest

/// Shared by the purging tests: files with chosen ages in the backing
/// container, made before the mount (a file never used through the mount
/// counts as last used at max(mtime, atime)).
class PurgeTestCase: MountedTestCase {
    let now = Int(Date().timeIntervalSince1970)

    /// Creates `path` in the backing container, `size` bytes, last modified `age` seconds ago.
    func makeAged(_ path: String, size: Int, age: Int, seed: UInt64 = 1, file: StaticString = #filePath, line: UInt = #line) {
        let full = fixture.container + "/" + path
        XCTAssertEqual(writeBytes(full, tiled(size, seed: seed)), 0, "create \(path)", file: file, line: line)
        setTimes(full, now - age)
    }

    func purge(_ value: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(setAttr(fixture.mountpoint, pf("purge"), value), 0, "setfattr purge=\(value)", file: file, line: line)
    }

    /// Which of `paths` are gone from the backing container.
    func gone(_ paths: [String]) -> [String] {
        paths.filter { !exists(fixture.container + "/" + $0) }
    }

    func available() -> UInt64 { numberAttr(fixture.mountpoint, "available") ?? 0 }
}

/// The space monitor: below the low mark it purges least recently used
/// candidates until available is at the high mark; pinned, open and
/// out-of-zone files are never purged.
final class MonitorPurgeTests: PurgeTestCase {
    static let caches = (0..<10).map { String(format: "caches/c%02d", $0) }
    static let protected = ["caches/pinned-file", "caches/pdir/p1", "caches/pdir/p2", "caches/open-file",
                            "Documents/doc1", "other/old"]
    // 16 MiB at mount: available 8 MiB, above low.
    override var mountOptions: [String] { ["capacity=24M", "low=6M", "high=10M"] }

    override func prepareContainer() throws {
        makeDirectories(fixture.container, ["caches", "caches/pdir", "Documents", "other"])
        for (i, path) in Self.caches.enumerated() { makeAged(path, size: MiB, age: 10_000 - i * 100, seed: UInt64(i)) }
        for (i, path) in Self.protected.enumerated() { makeAged(path, size: MiB, age: 50_000 + i, seed: 100 + UInt64(i)) }
    }

    func testMonitorPurgesLeastRecentlyUsedUntilHigh() throws {
        let m = fixture.mountpoint
        XCTAssertEqual(available(), 8 << 20, "capacity 24M − 16 files of 1 MiB")
        XCTAssertEqual(gone(Self.caches + Self.protected), [], "nothing purged while available ≥ low")
        // Never-used files: last_used is their modification time.
        XCTAssertEqual(getAttr(m + "/caches/c03", pf("last_used")), .value(String(now - 10_000 + 300)))
        XCTAssertEqual(setAttr(m + "/caches/pinned-file", pf("pinned"), "1"), 0)
        XCTAssertEqual(setAttr(m + "/caches/pdir", pf("pinned"), "1"), 0)
        let openFD = open(m + "/caches/open-file", O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(openFD, 0)
        defer { if openFD >= 0 { close(openFD) } }
        // Reading the oldest cache makes it the most recent.
        XCTAssertTrue(touchByReading(m + "/caches/c00"))
        XCTAssertGreaterThanOrEqual(Int(getAttr(m + "/caches/c00", pf("last_used")).valueNumber ?? 0), now, "c00 was just used")

        // 3 MiB more: available 5 MiB < low 6 MiB.
        XCTAssertEqual(writeBytes(m + "/caches/new", tiled(3 * MiB, seed: 77)), 0)
        let reached = eventually { available() >= 10 << 20 }
        XCTAssertTrue(reached, "the monitor brought available to high (10 MiB) within 5 s; available \(available())")

        // LRU order: c00 was read, so the purged ones are c01, c02, ... in that order, and no more than needed.
        let order = Array(Self.caches.dropFirst())
        let purged = gone(order)
        XCTAssertEqual(purged, Array(order.prefix(purged.count)), "purged files are a prefix of the LRU order")
        XCTAssertEqual(purged.count, 5, "5 MiB freed to go from 5 MiB to the high mark 10 MiB: \(purged)")
        XCTAssertEqual(gone(["caches/c00", "caches/new"] + Self.protected), [], "the read file, the new file, pinned, open and out-of-zone files stay")
        XCTAssertLessThan(available(), 11 << 20, "the monitor stops at the high mark")

        // The monitor settles its round (log, counters) after the ledger shows the space: wait for it.
        XCTAssertTrue(eventually { readPurgeLog(fixture.container).count == purged.count && numberAttr(m, "purged_files") == UInt64(purged.count) },
                      "the log and the counters caught up with the purge within 5 s: log \(readPurgeLog(fixture.container).count) lines, purged_files \(numberAttr(m, "purged_files") ?? 0)")
        let log = readPurgeLog(fixture.container)
        XCTAssertEqual(Set(log.map(\.path)), Set(purged), "the log names the purged files")
        for line in log {
            XCTAssertEqual(line.reason, "monitor", "\(line.path)")
            XCTAssertEqual(line.action, "delete", "\(line.path)")
            XCTAssertEqual(line.bytes, UInt64(MiB), "\(line.path)")
            XCTAssertEqual(line.size, UInt64(MiB), "\(line.path)")
            XCTAssertGreaterThanOrEqual(line.time, Double(now - 5), "\(line.path)")
            if let i = Self.caches.firstIndex(of: line.path) {
                XCTAssertEqual(line.lastUsed, Double(now - 10_000 + i * 100), accuracy: 1, "last_used of \(line.path)")
            }
        }
        XCTAssertEqual(numberAttr(m, "purged_files"), UInt64(purged.count))
        XCTAssertEqual(numberAttr(m, "purged_bytes"), UInt64(purged.count * MiB))

        // Purge everything: pinned, under a pinned directory, open, and out-of-zone files stay.
        purge("all")
        XCTAssertEqual(gone(Self.caches + ["caches/new"]).count, Self.caches.count + 1, "every candidate is gone: left \(Self.caches.filter { exists(fixture.container + "/" + $0) })")
        XCTAssertEqual(gone(Self.protected), [], "pinned, pinned-dir, open and out-of-zone files survive purge all")
        XCTAssertTrue(exists(fixture.container + "/caches/pdir"), "directories stay")
        XCTAssertEqual(numberAttr(m, "purgeable"), 0)
        XCTAssertTrue(readPurgeLog(fixture.container).suffix(5).allSatisfy { $0.reason == "manual" })

        // Once closed, the open file is a candidate again.
        close(openFD)
        XCTAssertTrue(eventually { numberAttr(m, "purgeable") == UInt64(MiB) }, "the closed file is purgeable again")
        purge("all")
        XCTAssertEqual(gone(["caches/open-file"]), ["caches/open-file"])
        // Unpinning the directory makes its files candidates.
        XCTAssertEqual(setAttr(m + "/caches/pdir", pf("pinned"), "0"), 0)
        purge("all")
        XCTAssertEqual(gone(["caches/pdir/p1", "caches/pdir/p2", "caches/pinned-file"]), ["caches/pdir/p1", "caches/pdir/p2"])
        XCTAssertEqual(gone(["Documents/doc1", "other/old"]), [])
    }
}

extension XattrOutcome {
    var valueNumber: UInt64? {
        if case .value(let text) = self { return UInt64(text) }
        return nil
    }
}

/// A write that does not fit purges first; one that cannot fit even then
/// fails with ENOSPC and damages nothing.
final class WritePathTests: PurgeTestCase {
    static let caches = (0..<6).map { "caches/c\($0)" }
    // 6 MiB of caches, 1 MiB document, 100 KiB elsewhere: about 4.9 MiB available.
    override var mountOptions: [String] { ["capacity=12M", "low=512K", "high=1M"] }
    let existing = tiled(MiB, seed: 42)
    let keep = tiled(100 * 1024, seed: 43)

    override func prepareContainer() throws {
        makeDirectories(fixture.container, ["caches", "Documents", "other"])
        for (i, path) in Self.caches.enumerated() { makeAged(path, size: MiB, age: 5000 - i * 100, seed: UInt64(i)) }
        XCTAssertEqual(writeBytes(fixture.container + "/Documents/existing", existing), 0)
        XCTAssertEqual(writeBytes(fixture.container + "/other/keep", keep), 0)
    }

    func testWriteBeyondAvailablePurgesOldestThenENOSPC() throws {
        let m = fixture.mountpoint
        let before = available()
        XCTAssertLessThan(before, 5 << 20)
        let otherBefore = TreeSnapshot.take(fixture.container + "/other")

        // 7 MiB > available, ≤ available + purgeable: it succeeds by purging the oldest caches.
        let document = tiled(7 * MiB, seed: 44)
        XCTAssertEqual(writeBytes(m + "/Documents/new", document), 0, "a write that fits after purging succeeds")
        XCTAssertEqual(readBytes(m + "/Documents/new"), document, "the new document reads back")
        let purged = gone(Self.caches)
        XCTAssertEqual(purged, Array(Self.caches.prefix(purged.count)), "the oldest caches went first")
        XCTAssertGreaterThanOrEqual(purged.count, 3, "at least 2.1 MiB had to be freed")
        let log = readPurgeLog(fixture.container)
        XCTAssertEqual(Set(log.map(\.path)), Set(purged))
        XCTAssertTrue(log.allSatisfy { $0.reason == "write" || $0.reason == "monitor" }, "reasons: \(log.map(\.reason))")

        // Appending more than available + purgeable to the old document fails with ENOSPC; its bytes stay.
        let important = numberAttr(m, "available_important") ?? 0
        let fd = open(m + "/Documents/existing", O_WRONLY | O_APPEND | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(fd, 0)
        let chunk = tiled(MiB, seed: 45)
        var appended = 0
        var failure: Int32 = 0
        while appended < 64 * MiB {
            let n = chunk.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 { failure = errno; break }
            appended += n
        }
        close(fd)
        XCTAssertEqual(failure, ENOSPC, "appending beyond available + purgeable fails with ENOSPC (\(Errno.name(failure)))")
        XCTAssertLessThanOrEqual(UInt64(appended), important + 4096, "no more was written than available + purgeable")
        XCTAssertEqual(gone(Self.caches), Self.caches, "every cache was purged before ENOSPC")
        let now = readBytes(m + "/Documents/existing") ?? []
        XCTAssertEqual(Array(now.prefix(MiB)), existing, "the document's earlier bytes are intact")
        XCTAssertEqual(now.count, MiB + appended, "the document holds exactly what the successful writes wrote")

        // Truncate-up makes a hole, which needs no room (SparseFileTests);
        // fallocate beyond what is left fails with ENOSPC and changes nothing.
        let size = fileSize(m + "/Documents/existing") ?? 0
        let allocated = numberAttr(m + "/Documents/existing", "allocated")
        XCTAssertEqual(truncate(m + "/Documents/existing", off_t(size) + off_t(8 * MiB)) == 0 ? 0 : errno, 0, "truncate up")
        XCTAssertEqual(numberAttr(m + "/Documents/existing", "allocated"), allocated, "the hole allocates nothing")
        XCTAssertEqual(truncate(m + "/Documents/existing", off_t(size)) == 0 ? 0 : errno, 0, "truncate back")
        XCTAssertEqual(fileSize(m + "/Documents/existing"), size)
        let fd2 = open(m + "/Documents/existing", O_RDWR | O_CLOEXEC)
        XCTAssertEqual(posix_fallocate(fd2, 0, off_t(size) + off_t(8 * MiB)), ENOSPC, "fallocate")
        close(fd2)
        XCTAssertEqual(fileSize(m + "/Documents/existing"), size)
        XCTAssertEqual(readBytes(m + "/Documents/new"), document, "the other document is intact")
        XCTAssertEqual(readBytes(fixture.container + "/other/keep"), keep, "files outside zones are untouched")
        XCTAssertEqual(readBytes(fixture.container + "/Documents/new"), document)
        XCTAssertEqual(TreeSnapshot.take(fixture.container + "/other"), otherBefore, "other/ is untouched")
        // The accounting still equals the walk.
        let walk = BackingWalk(fixture.container).totals(of: "", zones: AccountingTests.zones)
        XCTAssertEqual(mountTotals(m), walk, "root totals after ENOSPC")
    }
}

/// capacity and external changed with setxattr while mounted: the monitor
/// reacts; malformed values and other users change nothing.
final class ControlAttributeTests: PurgeTestCase {
    static let caches = (0..<10).map { "caches/c\($0)" }
    override var mountOptions: [String] { ["capacity=64M", "low=4M", "high=8M", "allow_other"] }

    override func prepareContainer() throws {
        XCTAssertEqual(chmod(fixture.container, 0o755), 0)
        makeDirectories(fixture.container, ["caches"])
        for (i, path) in Self.caches.enumerated() { makeAged(path, size: MiB, age: 9000 - i * 100, seed: UInt64(i)) }
    }

    func runAsNobody(_ arguments: [String]) throws -> CommandResult {
        try Subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"] + arguments, timeout: 20)
    }

    func testCapacityAndExternalChangesMakeTheMonitorReact() throws {
        let m = fixture.mountpoint
        XCTAssertEqual(setAttr(m, pf("capacity"), "16M"), 0)
        XCTAssertEqual(numberAttr(m, "capacity"), 16 << 20)
        XCTAssertEqual(available(), 6 << 20)
        // Available 2 MiB < low: purge until 8 MiB, the six oldest.
        XCTAssertEqual(setAttr(m, pf("external"), "4M"), 0)
        XCTAssertEqual(numberAttr(m, "external"), 4 << 20)
        XCTAssertTrue(eventually { available() >= 8 << 20 }, "monitor reacted to external within 5 s; available \(available())")
        XCTAssertEqual(gone(Self.caches), Array(Self.caches.prefix(6)))
        // Shrinking the capacity squeezes again: 10 − 4 − 4 = 2 MiB, and the
        // high mark cannot be reached: everything left goes, then the monitor stops.
        XCTAssertEqual(setAttr(m, pf("capacity"), "10M"), 0)
        // The names go first, then the purge is settled in the ledger: wait for both.
        XCTAssertTrue(
            eventually { gone(Self.caches).count == 10 && numberAttr(m, "purgeable") == 0 },
            "monitor reacted to capacity; available \(available())")
        XCTAssertEqual(available(), 6 << 20)
        XCTAssertEqual(numberAttr(m, "purgeable"), 0)
        XCTAssertTrue(readPurgeLog(fixture.container).allSatisfy { $0.reason == "monitor" })
    }

    func testMalformedValuesAndOtherUsersChangeNothing() throws {
        let m = fixture.mountpoint
        for name in ["capacity", "external", "purge"] {
            for value in ["12X", "-1", "", "1.5.3", "0x10", " 1M"] {
                XCTAssertEqual(setAttr(m, pf(name), value), EINVAL, "\(name)=\(value.debugDescription)")
            }
        }
        XCTAssertEqual(setAttr(m, pf("capacity"), "0"), EINVAL, "a zero capacity")
        XCTAssertEqual(numberAttr(m, "capacity"), 64 << 20)
        XCTAssertEqual(numberAttr(m, "external"), 0)
        XCTAssertEqual(gone(Self.caches), [])

        // Another user can read the figures but not change the device or purge.
        let read = try runAsNobody(["getfattr", "--only-values", "-n", pf("capacity"), m])
        XCTAssertEqual(read.status, 0, "\(read)")
        XCTAssertEqual(read.stdout, String(64 << 20))
        for (name, value) in [("capacity", "8M"), ("external", "60M"), ("purge", "all"), ("purge", "1M")] {
            let result = try runAsNobody(["setfattr", "-n", pf(name), "-v", value, m])
            XCTAssertNotEqual(result.status, 0, "uid 65534 set \(name)=\(value): \(result)")
            XCTAssertTrue(result.stderr.contains("Operation not permitted") || result.stderr.contains("Permission denied"),
                          "uid 65534 setting \(name): expected EPERM or EACCES: \(result.stderr)")
        }
        XCTAssertEqual(numberAttr(m, "capacity"), 64 << 20)
        XCTAssertEqual(numberAttr(m, "external"), 0)
        XCTAssertEqual(gone(Self.caches), [], "nothing purged by another user")
        XCTAssertEqual(numberAttr(m, "purged_files"), 0)
    }
}

/// Group directories purge as one item aged by their newest file; tombstone
/// directories keep the names, truncated to zero.
final class GroupAndTombstoneTests: PurgeTestCase {
    override var mountOptions: [String] { ["capacity=1G"] }

    override func prepareContainer() throws {
        makeDirectories(fixture.container, ["caches", "caches/g", "caches/t"])
        makeAged("caches/t/t1", size: 30_000, age: 2000)
        makeAged("caches/t/t2", size: 30_000, age: 1900)
        makeAged("caches/g/g1", size: 10_000, age: 1000)
        makeAged("caches/g/g2", size: 10_000, age: 900)
        makeAged("caches/g/g3", size: 10_000, age: 100)
        makeAged("caches/solo1", size: 10_000, age: 500)
        makeAged("caches/solo2", size: 10_000, age: 50)
    }

    func testGroupGoesTogetherAndTombstonesKeepNames() throws {
        let m = fixture.mountpoint
        XCTAssertEqual(setAttr(m + "/caches/g", pf("group"), "1"), 0)
        XCTAssertEqual(setAttr(m + "/caches/t", pf("tombstone"), "1"), 0)
        XCTAssertEqual(getAttr(m + "/caches/g", pf("group")), .value("1"))
        XCTAssertEqual(getAttr(m + "/caches/t", pf("tombstone")), .value("1"))
        let group = ["caches/g/g1", "caches/g/g2", "caches/g/g3"]

        // Order: t1, t2 (oldest), solo1 (500 s), the group (aged by g3, 100 s), solo2 (50 s).
        purge("1")
        XCTAssertEqual(fileSize(fixture.container + "/caches/t/t1"), 0, "t1 truncated, name kept")
        XCTAssertEqual(fileSize(fixture.container + "/caches/t/t2"), 30_000)
        XCTAssertEqual(getAttr(m + "/caches/t/t1", pf("size")), .value("0"))
        purge("1")
        XCTAssertEqual(fileSize(fixture.container + "/caches/t/t2"), 0)
        purge("1")
        XCTAssertEqual(gone(["caches/solo1"] + group + ["caches/solo2"]), ["caches/solo1"],
                       "the group is aged by its newest file (100 s), so solo1 (500 s) goes before it, though g1 and g2 are older")
        purge("1")
        XCTAssertEqual(gone(group + ["caches/solo2"]), group, "the group's files go together")
        XCTAssertTrue(exists(fixture.container + "/caches/g"), "the group directory stays")
        purge("all")
        XCTAssertEqual(gone(["caches/solo2"]), ["caches/solo2"])
        XCTAssertEqual(fileSize(fixture.container + "/caches/t/t1"), 0)
        XCTAssertEqual(fileSize(fixture.container + "/caches/t/t2"), 0)
        XCTAssertEqual(numberAttr(m, "purgeable"), 0)

        let log = readPurgeLog(fixture.container)
        XCTAssertEqual(log.count, 7, "one line per purged file; the truncated tombstones are not purged again: \(log.map(\.path))")
        if log.count == 7 {
            XCTAssertEqual(log.prefix(3).map(\.path), ["caches/t/t1", "caches/t/t2", "caches/solo1"])
            XCTAssertEqual(Set(log[3..<6].map(\.path)), Set(group))
            XCTAssertEqual(log[6].path, "caches/solo2")
        }
        XCTAssertEqual(log.filter { $0.path.hasPrefix("caches/t/") }.map(\.action), ["truncate", "truncate"])
        XCTAssertTrue(log.filter { !$0.path.hasPrefix("caches/t/") }.allSatisfy { $0.action == "delete" && $0.reason == "manual" })
        XCTAssertEqual(numberAttr(m, "purged_files"), 7)

        // The marks survive a remount.
        try fixture.remount(options: mountOptions)
        XCTAssertEqual(getAttr(m + "/caches/g", pf("group")), .value("1"))
        XCTAssertEqual(getAttr(m + "/caches/t", pf("tombstone")), .value("1"))
    }

    func testGroupAndTombstoneOnlyInsideZones() throws {
        let m = fixture.mountpoint
        makeDirectories(m, ["Documents", "Documents/d"])
        XCTAssertEqual(setAttr(m + "/Documents/d", pf("group"), "1"), EINVAL)
        XCTAssertEqual(setAttr(m + "/Documents/d", pf("tombstone"), "1"), EINVAL)
        XCTAssertEqual(getAttr(m + "/Documents/d", pf("group")), .failed(ENODATA))
        XCTAssertEqual(setAttr(m + "/caches/g/g1", pf("group"), "1"), EINVAL, "group on a file")
    }
}

/// A file whose times lie in the future (a skewed clock, `touch -d`, an
/// unpacked archive) counts as used at the mount, not years from now: it
/// is not held back from purging for good, and the recency clock stays on
/// the wall clock for every later use.
final class FutureTimesTests: PurgeTestCase {
    override func prepareContainer() throws {
        makeDirectories(fixture.container, ["caches"])
        makeAged("caches/future", size: 10_000, age: -10 * 365 * 86_400)
        makeAged("caches/today", size: 10_000, age: 60)
    }

    func testTimesInTheFutureCountAsTheMount() throws {
        let m = fixture.mountpoint
        let later = Int(Date().timeIntervalSince1970) + 60
        let future = try XCTUnwrap(getAttr(m + "/caches/future", pf("last_used")).valueNumber)
        XCTAssertLessThanOrEqual(future, UInt64(later), "last_used of a file dated ten years ahead")
        XCTAssertEqual(readBytes(m + "/caches/today")?.count, 10_000)
        let used = try XCTUnwrap(getAttr(m + "/caches/today", pf("last_used")).valueNumber)
        XCTAssertLessThanOrEqual(used, UInt64(later), "a use after the mount is stamped with the wall clock")
        XCTAssertGreaterThanOrEqual(used, UInt64(now), "and not before it")
    }
}
