import Foundation
import Glibc
import PurgeCore
import XCTest

/// Purging never reaches outside a zone or the container: symlinks in
/// zones, zones that are symlinks or leave the container, hard links to
/// files outside, the state directory.
final class PurgeSafetyTests: PurgeTestCase {
    override var mountsInSetUp: Bool { false }
    var outside: String { fixture.base + "/outside" }
    let precious = tiled(20_000, seed: 99)

    override func prepareContainer() throws {
        makeDirectories(fixture.base, ["outside", "outside/dir"])
        for name in ["victim", "dir/f", "hard", "hard2"] {
            XCTAssertEqual(writeBytes(outside + "/" + name, precious), 0)
        }
    }

    func assertOutsideIntact(file: StaticString = #filePath, line: UInt = #line) {
        for name in ["victim", "dir/f", "hard", "hard2"] {
            let bytes = readBytes(outside + "/" + name)
            XCTAssertTrue(bytes == precious, "outside/\(name) is not intact: \(bytes.map { "\($0.count) bytes, fnv \(String(fnv1a($0), radix: 16))" } ?? "gone"), expected \(precious.count) bytes, fnv \(String(fnv1a(precious), radix: 16))", file: file, line: line)
        }
    }

    func testSymlinksInAZoneAreNeverFollowed() throws {
        makeDirectories(fixture.container, ["caches"])
        makeAged("caches/plain", size: 5000, age: 100)
        try fixture.mount(options: ["capacity=1G"])
        let m = fixture.mountpoint
        XCTAssertEqual(symlink(outside + "/victim", m + "/caches/abs-link"), 0)
        XCTAssertEqual(symlink(outside + "/dir", m + "/caches/dir-link"), 0)
        XCTAssertEqual(symlink("../../outside/victim", m + "/caches/rel-link"), 0)
        XCTAssertEqual(getAttr(m + "/caches", pf("files")), .value("1"), "symlinks are not files")
        purge("all")
        XCTAssertFalse(exists(fixture.container + "/caches/plain"))
        assertOutsideIntact()
        XCTAssertEqual(readPurgeLog(fixture.container).map(\.path), ["caches/plain"], "only the regular file was purged")
    }

    func testAZoneThatIsASymlinkIsNotAZone() throws {
        // linkzone -> outside/; Library -> outside/lib (so Library/Caches is reached through a symlink).
        makeDirectories(fixture.base, ["outside/lib", "outside/lib/Caches"])
        XCTAssertEqual(writeBytes(outside + "/lib/Caches/f", precious), 0)
        XCTAssertEqual(symlink(outside, fixture.container + "/linkzone"), 0)
        XCTAssertEqual(symlink(outside + "/lib", fixture.container + "/Library"), 0)
        makeDirectories(fixture.container, ["caches"])
        makeAged("caches/plain", size: 5000, age: 100)
        try fixture.mount(options: ["capacity=1G", "purgeable=linkzone:Library/Caches:caches"])
        XCTAssertEqual(getAttr(fixture.mountpoint, pf("files")), .value("1"), "nothing outside is counted")
        purge("all")
        assertOutsideIntact()
        XCTAssertTrue(readBytes(outside + "/lib/Caches/f") == precious, "outside/lib/Caches/f is intact")
        XCTAssertEqual(readPurgeLog(fixture.container).map(\.path), ["caches/plain"])
        XCTAssertTrue(exists(fixture.container + "/linkzone"))
    }

    func testAZoneOutsideTheContainerIsNotAZone() throws {
        makeDirectories(fixture.container, ["caches"])
        makeAged("caches/plain", size: 5000, age: 100)
        let arguments = fixture.mountArguments(["capacity=1G", "purgeable=../outside:caches"], foreground: true, inPlace: false)
        do {
            try fixture.mount(options: ["capacity=1G", "purgeable=../outside:caches"])
        } catch {
            // Refusing the mount is fine too.
            XCTAssertFalse(MountTable.isMounted(fixture.mountpoint), "\(arguments)")
            assertOutsideIntact()
            return
        }
        purge("all")
        assertOutsideIntact()
        XCTAssertEqual(readPurgeLog(fixture.container).map(\.path), ["caches/plain"])
    }

    /// A zone file that has another name outside the container: purging
    /// deletes the zone name only; the outside file keeps its data.
    func testHardLinkToAFileOutsideKeepsItsData() throws {
        makeDirectories(fixture.container, ["caches"])
        XCTAssertEqual(link(outside + "/hard2", fixture.container + "/caches/alias2"), 0)
        try fixture.mount(options: ["capacity=1G"])
        purge("all")
        assertOutsideIntact()
    }

    /// The same in a tombstone directory: truncating the file would destroy
    /// the data of the outside name (the container sees only one of its two links).
    func testTombstoneNeverTruncatesAFileLinkedOutside() throws {
        makeDirectories(fixture.container, ["caches", "caches/tomb"])
        XCTAssertEqual(link(outside + "/hard", fixture.container + "/caches/tomb/alias"), 0)
        makeAged("caches/tomb/own", size: 5000, age: 100)
        try fixture.mount(options: ["capacity=1G"])
        XCTAssertEqual(setAttr(fixture.mountpoint + "/caches/tomb", pf("tombstone"), "1"), 0)
        purge("all")
        XCTAssertEqual(fileSize(fixture.container + "/caches/tomb/own"), 0, "the container's own tombstoned file is truncated")
        assertOutsideIntact()
    }

    func testTheStateDirectoryIsNeverPurged() throws {
        // The default state directory named as a zone, and a state directory inside a zone.
        makeDirectories(fixture.container, ["caches", ".purgefs"])
        XCTAssertEqual(writeBytes(fixture.container + "/.purgefs/marker", precious), 0)
        setTimes(fixture.container + "/.purgefs/marker", now - 100_000)
        makeAged("caches/plain", size: 5000, age: 100)
        do {
            try fixture.mount(options: ["capacity=1G", "purgeable=caches:.purgefs"])
            purge("all")
            XCTAssertTrue(exists(fixture.container + "/.purgefs/purge.log"))
            XCTAssertEqual(readPurgeLog(fixture.container).map(\.path), ["caches/plain"])
        } catch {
            // Refusing a zone that would hold the state directory is fine.
            XCTAssertTrue(fixture.daemonStderrText().contains(".purgefs"), "\(error)")
        }
        XCTAssertTrue(readBytes(fixture.container + "/.purgefs/marker") == precious, "the state directory's marker is intact")
        for problem in fixture.unmount() { XCTFail(problem) }

        // A state directory inside a zone is refused at mount, or never purged.
        do {
            try fixture.mount(options: ["capacity=1G", "state=" + fixture.container + "/caches/state"])
            makeAged("caches/plain2", size: 5000, age: 100)
            purge("all")
            for name in ["purge.log", "purged", "daemon.log"] {
                XCTAssertTrue(exists(fixture.container + "/caches/state/" + name), "state file \(name) in a zone survives purge all")
            }
        } catch {
            XCTAssertTrue(fixture.daemonStderrText().contains("state"), "\(error)")
        }
        for problem in fixture.unmount() { XCTFail(problem) }

        // A state directory that ends up in a zone by a rename through the mount.
        makeDirectories(fixture.container, ["other"])
        let state = fixture.container + "/other/state"
        try fixture.mount(options: ["capacity=1G", "state=" + state, "purgeable=zone"])
        XCTAssertEqual(writeBytes(fixture.mountpoint + "/other/x", tiled(5000, seed: 1)), 0)
        XCTAssertEqual(rename(fixture.mountpoint + "/other", fixture.mountpoint + "/zone"), 0, "rename other zone: \(Errno.name(errno))")
        purge("all")
        let moved = fixture.container + "/zone/state"
        XCTAssertFalse(exists(fixture.container + "/zone/x"), "the zone's own file is purged")
        for name in ["purge.log", "purged", "daemon.log"] {
            XCTAssertTrue(exists(moved + "/" + name), "state file \(name), moved into a zone, survives purge all")
        }
        for problem in fixture.unmount() { XCTFail(problem) }
        XCTAssertTrue(exists(moved + "/recency"), "recency saved at unmount")
    }
}

/// The purge order survives unmount and kill -9; the purge counters survive remounts.
final class RecencyAndCounterTests: PurgeTestCase {
    static let caches = (0..<5).map { "caches/c\($0)" }
    override var mountOptions: [String] { ["capacity=1G"] }

    override func prepareContainer() throws {
        makeDirectories(fixture.container, ["caches"])
        for (i, path) in Self.caches.enumerated() { makeAged(path, size: 50_000, age: 5000 - i * 100, seed: UInt64(i)) }
    }

    /// Puts the backing times of c0 back, so only purgefs's own record can know it was used.
    func resetBackingTimes() {
        setTimes(fixture.container + "/caches/c0", now - 5000)
    }

    func checkReadFileSurvives(file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertGreaterThanOrEqual(getAttr(fixture.mountpoint + "/caches/c0", pf("last_used")).valueNumber ?? 0, UInt64(now),
                                    "last_used of the read file after remount", file: file, line: line)
        purge("1", file: file, line: line)
        XCTAssertEqual(gone(Self.caches), ["caches/c1"], "the oldest unread file goes first; the read one stays", file: file, line: line)
        purge("1", file: file, line: line)
        XCTAssertEqual(gone(Self.caches), ["caches/c1", "caches/c2"], file: file, line: line)
    }

    func testRecencySurvivesUnmount() throws {
        XCTAssertTrue(touchByReading(fixture.mountpoint + "/caches/c0"))
        for problem in fixture.unmount() { XCTFail(problem) }
        resetBackingTimes()
        try fixture.mount(options: mountOptions)
        checkReadFileSurvives()
    }

    func testRecencySurvivesKill9() throws {
        // The snapshot, or the journal of changes appended to it.
        let saves = ["recency", "recency.journal"].map { fixture.container + "/.purgefs/" + $0 }
        // Saved every ~5 s: waits (with a deadline) until a save written after `path` was read.
        func useAndWaitForASave(_ path: String) -> Bool {
            guard touchByReading(fixture.mountpoint + "/" + path) else { return false }
            var usedAt = timespec()
            clock_gettime(CLOCK_REALTIME, &usedAt)
            return eventually(timeout: 15) {
                saves.contains { path in
                    var st = stat()
                    guard lstat(path, &st) == 0 else { return false }
                    return (st.st_mtim.tv_sec, st.st_mtim.tv_nsec) > (usedAt.tv_sec, usedAt.tv_nsec)
                }
            }
        }
        XCTAssertTrue(useAndWaitForASave("caches/c0"), "the purge order was saved within 15 s of a use")
        // That save may have taken its changes just before the read and been
        // written just after it. Saves run one after another, so the save
        // after one more use (of the newest file, which no check here needs
        // old) took its changes after the first save was written: c0's are in.
        XCTAssertTrue(useAndWaitForASave("caches/c4"), "the purge order was saved within 15 s of a second use")
        fixture.killDaemon()
        resetBackingTimes()
        try fixture.mount(options: mountOptions)
        checkReadFileSurvives()
    }

    func testCountersSurviveRemountAndKill9() throws {
        let m = fixture.mountpoint
        XCTAssertEqual(numberAttr(m, "purged_files"), 0)
        XCTAssertEqual(numberAttr(m, "purged_bytes"), 0)
        purge("1")
        purge("1")
        let log = readPurgeLog(fixture.container)
        XCTAssertEqual(log.count, 2)
        let bytes = log.reduce(0) { $0 + $1.bytes }
        XCTAssertGreaterThanOrEqual(bytes, 100_000)
        XCTAssertEqual(numberAttr(m, "purged_files"), 2)
        XCTAssertEqual(numberAttr(m, "purged_bytes"), bytes)
        XCTAssertEqual(try? String(contentsOfFile: fixture.container + "/.purgefs/purged", encoding: .utf8), "bytes \(bytes)\nfiles 2\n")

        try fixture.remount(options: mountOptions)
        XCTAssertEqual(numberAttr(m, "purged_files"), 2, "after a remount")
        XCTAssertEqual(numberAttr(m, "purged_bytes"), bytes)
        purge("1")
        let bytes3 = readPurgeLog(fixture.container).reduce(0) { $0 + $1.bytes }
        XCTAssertEqual(numberAttr(m, "purged_files"), 3)
        XCTAssertEqual(numberAttr(m, "purged_bytes"), bytes3)

        fixture.killDaemon()
        try fixture.mount(options: mountOptions)
        XCTAssertEqual(numberAttr(m, "purged_files"), 3, "after kill -9")
        XCTAssertEqual(numberAttr(m, "purged_bytes"), bytes3)
    }

    /// A pin belongs to the file: once the file is deleted, a new file that
    /// gets the same inode number must not inherit it (now or after a remount).
    func testPinIsForgottenWithTheFile() throws {
        let m = fixture.mountpoint
        XCTAssertEqual(writeBytes(m + "/caches/pinned", tiled(1000, seed: 5)), 0)
        XCTAssertEqual(setAttr(m + "/caches/pinned", pf("pinned"), "1"), 0)
        let ino = inodeOf(fixture.container + "/caches/pinned")!
        XCTAssertEqual(unlink(m + "/caches/pinned"), 0)
        var reused: String?
        for i in 0..<200 where reused == nil {
            XCTAssertEqual(writeBytes(m + "/caches/new\(i)", tiled(1000, seed: 6)), 0)
            if inodeOf(fixture.container + "/caches/new\(i)") == ino { reused = "caches/new\(i)" }
        }
        guard let reused else {
            // The filesystem did not hand the number out again: the case cannot arise here.
            return
        }
        XCTAssertEqual(getAttr(m + "/" + reused, pf("pinned")), .value("0"), "\(reused) reuses the deleted pinned file's inode \(ino)")
        try fixture.remount(options: mountOptions)
        XCTAssertEqual(getAttr(m + "/" + reused, pf("pinned")), .value("0"),
                       "after a remount, \(reused) (inode \(ino) of a deleted pinned file) inherits the pin")
        purge("all")
        XCTAssertFalse(exists(fixture.container + "/" + reused), "\(reused) is purged like any cache")
    }
}

/// Use order is exact (not rounded to seconds), through reads and writes,
/// and kept exactly across a remount.
final class RecencyOrderTests: PurgeTestCase {
    static let caches = (0..<6).map { "caches/c\($0)" }
    override var mountOptions: [String] { ["capacity=1G"] }

    override func prepareContainer() throws {
        makeDirectories(fixture.container, ["caches"])
        // All with the same modification second: only use through the mount orders them.
        for (i, path) in Self.caches.enumerated() { makeAged(path, size: 4096, age: 3000, seed: UInt64(i)) }
    }

    func use(_ order: [Int]) {
        let m = fixture.mountpoint
        for i in order {
            if i % 2 == 0 {
                XCTAssertTrue(touchByReading(m + "/" + Self.caches[i]), "read \(Self.caches[i])")
            } else {
                let fd = open(m + "/" + Self.caches[i], O_WRONLY | O_CLOEXEC)
                XCTAssertEqual(pwrite(fd, "x", 1, 0), 1, "write \(Self.caches[i])")
                close(fd)
            }
        }
    }

    func assertPurgeOrder(_ expected: [Int], _ label: String, file: StaticString = #filePath, line: UInt = #line) {
        var order: [String] = []
        for _ in expected {
            let before = Set(gone(Self.caches))
            purge("1", file: file, line: line)
            order += gone(Self.caches).filter { !before.contains($0) }
        }
        XCTAssertEqual(order, expected.map { Self.caches[$0] }, "\(label): purge order follows use order within one second", file: file, line: line)
    }

    func testUseOrderWithinASecondIsExact() throws {
        use([3, 0, 5, 1, 4, 2])
        assertPurgeOrder([3, 0, 5], "same mount")
    }

    func testUseOrderSurvivesRemountExactly() throws {
        use([4, 1, 5, 0, 2, 3])
        try fixture.remount(options: mountOptions)
        assertPurgeOrder([4, 1, 5, 0, 2, 3], "after a remount")
    }
}

/// The purge log is JSON whatever the names, and the monitor keeps purging
/// new caches while available stays below the low mark.
final class PurgeLogAndMonitorTests: PurgeTestCase {
    override var mountOptions: [String] { ["capacity=16M", "low=4M", "high=6M"] }

    override func prepareContainer() throws {
        makeDirectories(fixture.container, ["caches", "Documents"])
        makeAged("caches/we\"ird\\name\n\ttab", size: 1000, age: 100)
        makeAged("caches/ünïcode ☃", size: 1000, age: 90)
    }

    func testLogLinesAreJSONWhateverTheNames() throws {
        purge("all")
        let log = readPurgeLog(fixture.container)
        XCTAssertEqual(log.map(\.path), ["caches/we\"ird\\name\n\ttab", "caches/ünïcode ☃"])
    }

    func testMonitorPurgesNewCachesWhileBelowLow() throws {
        let m = fixture.mountpoint
        // 13 MiB of documents: available 3 MiB < low, nothing purgeable but the two small caches.
        XCTAssertEqual(writeBytes(m + "/Documents/big", tiled(13 * MiB, seed: 1)), 0)
        XCTAssertTrue(eventually { numberAttr(m, "purgeable") == 0 }, "the monitor purged the small caches")
        XCTAssertLessThan(available(), 4 << 20)
        // A new cache written while below low is purged once closed.
        XCTAssertEqual(writeBytes(m + "/caches/new", tiled(512 * 1024, seed: 2)), 0)
        XCTAssertTrue(eventually { !exists(fixture.container + "/caches/new") }, "a cache written while below low is purged within 5 s")
        XCTAssertTrue(exists(fixture.container + "/Documents/big"))
    }
}

/// Without `capacity`, the device is the backing filesystem; setting
/// `capacity` while mounted makes it simulated.
final class RealDeviceTests: PurgeTestCase {
    func testRealDeviceFiguresAndSwitchToSimulated() throws {
        let m = fixture.mountpoint
        var backing = statvfs()
        XCTAssertEqual(statvfs(fixture.container, &backing), 0)
        let size = UInt64(backing.f_blocks) * UInt64(backing.f_frsize)
        XCTAssertEqual(numberAttr(m, "capacity"), size, "capacity is the backing filesystem's size")
        var mounted = statvfs()
        XCTAssertEqual(statvfs(m, &mounted), 0)
        XCTAssertEqual(UInt64(mounted.f_blocks) * UInt64(mounted.f_frsize), size, "statfs of the mount shows the backing size")
        let available = numberAttr(m, "available") ?? 0
        let backingAvailable = UInt64(backing.f_bavail) * UInt64(backing.f_frsize)
        XCTAssertLessThan(available > backingAvailable ? available - backingAvailable : backingAvailable - available, 256 << 20,
                          "available \(available) is the backing filesystem's available space \(backingAvailable) (give or take other activity)")
        XCTAssertEqual(setAttr(m, pf("capacity"), "2G"), 0)
        XCTAssertEqual(numberAttr(m, "capacity"), 2 << 30)
        XCTAssertEqual(statvfs(m, &mounted), 0)
        XCTAssertEqual(UInt64(mounted.f_blocks) * UInt64(mounted.f_frsize), 2 << 30, "statfs follows the simulated capacity")
        let allocated = numberAttr(m, "allocated") ?? 0
        XCTAssertEqual(numberAttr(m, "available"), (2 << 30) - allocated)
    }
}
