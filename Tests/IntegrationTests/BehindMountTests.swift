import Foundation
import Glibc
import XCTest

/// Changes made behind the mount (straight into the backing container while
/// it is mounted elsewhere, or through a descriptor taken before an in-place
/// mount) reach every `user.purgefs.*` figure, and a cache file made that
/// way is purged like any other.
final class BehindMountTests: MountedTestCase {
    static let zones = ["Library/Caches", "caches", "tmp"]
    override var mountOptions: [String] { ["capacity=64M", "low=4M", "high=8M"] }

    /// Every directory's and file's figures through the mount, against a
    /// fresh walk of the backing container: nil when they agree, else what differs.
    static func differences(mount m: String, container c: String, capacity: UInt64?) -> String? {
        var problems: [String] = []
        let walk = BackingWalk(c)
        for directory in walk.directories.keys.sorted() {
            let expected = walk.totals(of: directory, zones: zones)
            let path = directory.isEmpty ? m : m + "/" + directory
            let seen = mountTotals(path)
            if seen != expected { problems.append("/\(directory): walk \(expected), mount \(seen.map(\.description) ?? "unreadable")") }
            if getAttr(path, pf("clone_savings")) != .value("0") { problems.append("/\(directory): clone_savings \(getAttr(path, pf("clone_savings")))") }
        }
        for (_, entry) in walk.files.sorted(by: { $0.key < $1.key }) {
            let name = entry.names[0]
            let inZone = entry.names.allSatisfy { n in zones.contains { BackingWalk.isBelow(n, $0) } }
            let seen = [getAttr(m + "/" + name, pf("size")), getAttr(m + "/" + name, pf("allocated")), getAttr(m + "/" + name, pf("purgeable"))]
            let expected: [XattrOutcome] = [.value(String(entry.size)), .value(String(entry.allocated)), .value(inZone ? "1" : "0")]
            if seen != expected { problems.append("\(name): walk \(expected), mount \(seen)") }
        }
        if let capacity {
            let used = walk.totals(of: "", zones: zones).allocated
            let seen = getAttr(m, pf("available"))
            if seen != .value(String(capacity - used)) { problems.append("available: walk \(capacity - used), mount \(seen)") }
        }
        // What the mount lists is what the backing store holds.
        for directory in walk.directories.keys {
            let listed = (try? FileManager.default.contentsOfDirectory(atPath: directory.isEmpty ? m : m + "/" + directory)) ?? []
            let backing = ((try? FileManager.default.contentsOfDirectory(atPath: directory.isEmpty ? c : c + "/" + directory)) ?? [])
                .filter { !(directory.isEmpty && $0 == ".purgefs") }
            if Set(listed) != Set(backing) { problems.append("/\(directory) lists \(listed.sorted()), backing \(backing.sorted())") }
        }
        return problems.isEmpty ? nil : problems.joined(separator: "\n  ")
    }

    /// Polls (against a deadline) until the mount agrees with a fresh walk.
    static func assertSettles(_ fixture: MountFixture, _ label: String, timeout: TimeInterval = 10,
                              file: StaticString = #filePath, line: UInt = #line) {
        var last: String?
        let settled = eventually(timeout: timeout) {
            last = differences(mount: fixture.mountpoint, container: fixture.container, capacity: 64 << 20)
            return last == nil
        }
        XCTAssertTrue(settled, "\(label): the mount's figures differ from a walk of the backing store:\n  \(last ?? "")",
                      file: file, line: line)
    }

    func testWritesGrowthTruncationRenamesAndDeletesBehindTheMountReachEveryFigure() throws {
        try Self.runWorkload(fixture)
    }

    /// Bytes rewritten behind the mount at the same size (no figure
    /// changes) still reach a reader through the mount: the kernel's cached
    /// pages of the file are dropped, not kept until they age out.
    func testSameSizeRewriteBehindTheMountIsReadThroughTheMount() throws {
        let m = fixture.mountpoint, c = fixture.container
        try FileManager.default.createDirectory(atPath: m + "/Documents", withIntermediateDirectories: true)
        let before = Data(repeating: 0x61, count: 64 << 10), after = Data(repeating: 0x62, count: 64 << 10)
        try before.write(to: URL(fileURLWithPath: m + "/Documents/notes"))
        // Held open, so the kernel keeps the inode and its cached pages.
        let reader = open(m + "/Documents/notes", O_RDONLY)
        XCTAssertGreaterThanOrEqual(reader, 0)
        defer { close(reader) }
        func readAll() -> Data {
            var buffer = [UInt8](repeating: 0, count: 64 << 10)
            let count = pread(reader, &buffer, buffer.count, 0)
            return Data(buffer.prefix(max(count, 0)))
        }
        XCTAssertEqual(readAll(), before)  // now cached
        let writer = try XCTUnwrap(FileHandle(forWritingAtPath: c + "/Documents/notes"))
        try writer.write(contentsOf: after)
        try writer.close()
        var seen = Data()
        let reached = eventually(timeout: 10) {
            seen = readAll()
            return seen == after
        }
        XCTAssertTrue(reached, "the mount still reads \(seen.prefix(4).map { String($0) }) after the rewrite behind it")
    }

    func testCacheFileMadeBehindTheMountIsPurgedUnderPressure() throws {
        let c = fixture.container
        let m = fixture.mountpoint
        makeDirectories(c, ["caches", "Documents"])
        XCTAssertEqual(writeBytes(c + "/Documents/keep", tiled(1 << 20, seed: 8)), 0)
        XCTAssertEqual(writeBytes(c + "/caches/big", tiled(8 << 20, seed: 9)), 0)
        XCTAssertTrue(eventually(timeout: 10) { getAttr(m + "/caches", pf("purgeable")) == .value(String(8 << 20)) },
                      "the cache file written behind the mount is purgeable; caches purgeable \(getAttr(m + "/caches", pf("purgeable")))")
        // 11 MiB − 9 MiB used leaves 2 MiB, below the low mark (4 MiB): the monitor purges to 8 MiB.
        XCTAssertEqual(setAttr(m, pf("capacity"), "11M"), 0)
        XCTAssertTrue(eventually(timeout: 10) { access(c + "/caches/big", F_OK) != 0 },
                      "the monitor purged the cache file made behind the mount; available \(getAttr(m, pf("available")))")
        XCTAssertEqual(access(c + "/Documents/keep", F_OK), 0, "nothing outside a zone is purged")
        XCTAssertTrue(eventually { readPurgeLog(c).contains { $0.path == "caches/big" && $0.reason == "monitor" } },
                      "purge.log names it: \(readPurgeLog(c).map(\.path))")
        XCTAssertEqual(numberAttr(m, "available"), 10 << 20)
    }
}

extension BehindMountTests {
    /// ext4 gives a new directory the inode number of one just deleted; the
    /// new directory is a new one to the daemon (not the old one renamed), and
    /// with inotify it is watched (the old watch went with the old
    /// directory), so a file made and grown in it is seen. Nothing below
    /// `caches` is looked up through the mount before the end, so only the
    /// watches can tell the daemon (a lookup would also hold the old inode).
    static func runInodeReuse(_ fixture: MountFixture) throws {
        let c = fixture.container, m = fixture.mountpoint
        func cachesFigure(_ name: String) -> XattrOutcome { getAttr(m + "/caches", pf(name)) }
        makeDirectories(c, ["caches", "caches/old"])
        XCTAssertEqual(writeBytes(c + "/caches/old/x", tiled(1_000, seed: 12)), 0)
        XCTAssertTrue(eventually(timeout: 10) { cachesFigure("files") == .value("1") }, "caches files \(cachesFigure("files"))")
        XCTAssertEqual(unlink(c + "/caches/old/x"), 0)
        replaceReusingInode(c, "caches/old", with: "caches/new", directory: true)
        XCTAssertTrue(eventually(timeout: 10) { cachesFigure("files") == .value("0") }, "caches files \(cachesFigure("files"))")
        XCTAssertEqual(writeBytes(c + "/caches/new/file", tiled(10_000, seed: 13)), 0)
        XCTAssertTrue(eventually(timeout: 10) { cachesFigure("size") == .value("10000") },
                      "the file made in caches/new is seen; caches size \(cachesFigure("size"))")
        let fd = open(c + "/caches/new/file", O_WRONLY | O_APPEND | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(fd, 0)
        let more = tiled(500_000, seed: 14)
        XCTAssertEqual(more.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }, more.count)
        close(fd)
        XCTAssertTrue(eventually(timeout: 10) { cachesFigure("size") == .value("510000") },
                      "its growth is seen; caches size \(cachesFigure("size"))")
        assertSettles(fixture, "after growing caches/new/file")

        // The same under the same name: a directory deleted and made again.
        makeDirectories(c, ["caches/same"])
        XCTAssertEqual(writeBytes(c + "/caches/same/y", tiled(1_000, seed: 15)), 0)
        XCTAssertTrue(eventually(timeout: 10) { cachesFigure("files") == .value("2") }, "caches files \(cachesFigure("files"))")
        XCTAssertEqual(unlink(c + "/caches/same/y"), 0)
        replaceReusingInode(c, "caches/same", with: "caches/same", directory: true)
        assertSettles(fixture, "after caches/same was deleted and made again")
    }

    /// Writes, growth, truncation, renames, links and deletes in the backing
    /// container, each phase followed by a wait for the mount to agree with a walk.
    static func runWorkload(_ fixture: MountFixture) throws {
        let c = fixture.container
        // Seen once through the mount, so the kernel has these names cached.
        assertSettles(fixture, "at mount")
        makeDirectories(c, ["caches", "caches/a", "Documents", "other", "other/deep", "other/deep/er"])
        XCTAssertEqual(writeBytes(c + "/caches/a/one", tiled(300_000, seed: 1)), 0)
        XCTAssertEqual(writeBytes(c + "/Documents/two", tiled(70_000, seed: 2)), 0)
        XCTAssertEqual(writeBytes(c + "/other/deep/er/three", tiled(5_000, seed: 3)), 0)
        XCTAssertEqual(writeBytes(c + "/caches/four", tiled(1 << 20, seed: 4)), 0)
        assertSettles(fixture, "after creating files behind the mount")

        // Grow, truncate, overwrite in place.
        let fd = open(c + "/caches/a/one", O_WRONLY | O_APPEND | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(fd, 0)
        let more = tiled(900_000, seed: 5)
        XCTAssertEqual(more.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }, more.count)
        close(fd)
        XCTAssertEqual(truncate(c + "/caches/four", 4096), 0)
        XCTAssertEqual(truncate(c + "/Documents/two", 2_000_000), 0)
        assertSettles(fixture, "after growing and truncating behind the mount")

        // Rename within a directory, across directories, into and out of a
        // zone, over an existing file; hard link; move a directory.
        XCTAssertEqual(rename(c + "/caches/four", c + "/caches/four-renamed"), 0)
        XCTAssertEqual(rename(c + "/Documents/two", c + "/caches/a/two"), 0)
        XCTAssertEqual(rename(c + "/other/deep/er/three", c + "/Documents/three"), 0)
        XCTAssertEqual(writeBytes(c + "/caches/victim", tiled(40_000, seed: 6)), 0)
        XCTAssertEqual(rename(c + "/caches/four-renamed", c + "/caches/victim"), 0)
        XCTAssertEqual(link(c + "/caches/a/one", c + "/other/one-link"), 0)
        XCTAssertEqual(rename(c + "/other/deep", c + "/caches/deep"), 0)
        assertSettles(fixture, "after renames behind the mount")

        // Delete files, and a whole tree.
        XCTAssertEqual(unlink(c + "/other/one-link"), 0)
        XCTAssertEqual(unlink(c + "/caches/victim"), 0)
        XCTAssertNil(removeTree(c + "/caches/deep"))
        makeDirectories(c, ["tmp", "tmp/new"])
        XCTAssertEqual(writeBytes(c + "/tmp/new/five", tiled(123_456, seed: 7)), 0)
        assertSettles(fixture, "after deletes behind the mount")
    }
}

/// The inotify fallback (fanotify skipped) follows the same workload.
final class BehindMountInotifyTests: MountedTestCase {
    override var mountsInSetUp: Bool { false }

    func testTheInotifyFallbackFollowsTheSameChanges() throws {
        try fixture.mount(options: ["capacity=64M", "low=4M", "high=8M"], launcher: ["env", "PURGEFS_TRACK_BEHIND=inotify"])
        try BehindMountTests.runWorkload(fixture)
    }
}

/// The inode-reuse workload, with each way of tracking, on a fresh ext4
/// image of its own: there a new directory takes the number of one just
/// deleted, which a long-used host disk does not promise.
final class BehindMountInodeReuseTests: MountedTestCase {
    override var containerOnFreshExt4: Bool { true }
    override var mountsInSetUp: Bool { false }

    func testADirectoryMadeWithADeletedOnesInodeNumberIsANewDirectory() throws {
        try fixture.mount(options: ["capacity=64M", "low=4M", "high=8M"])
        try BehindMountTests.runInodeReuse(fixture)
    }

    func testADirectoryMadeWithADeletedOnesInodeNumberIsWatched() throws {
        try fixture.mount(options: ["capacity=64M", "low=4M", "high=8M"], launcher: ["env", "PURGEFS_TRACK_BEHIND=inotify"])
        try BehindMountTests.runInodeReuse(fixture)
    }
}

/// With live tracking turned off, the periodic verification finds a change
/// made behind the mount, repairs the ledger and says so in daemon.log.
final class BehindMountVerificationTests: MountedTestCase {
    override var mountsInSetUp: Bool { false }

    func testVerificationRepairsWhatTrackingMissedAndLogsIt() throws {
        let c = fixture.container
        let m = fixture.mountpoint
        makeDirectories(c, ["caches", "Documents"])
        XCTAssertEqual(writeBytes(c + "/Documents/old", tiled(10_000, seed: 10)), 0)
        try fixture.mount(options: ["capacity=64M"], foreground: false,
                          launcher: ["env", "PURGEFS_TRACK_BEHIND=0", "PURGEFS_VERIFY_INTERVAL=1"])
        XCTAssertEqual(writeBytes(c + "/caches/missed", tiled(200_000, seed: 11)), 0)
        XCTAssertEqual(truncate(c + "/Documents/old", 30_000), 0)
        var last: String?
        let settled = eventually(timeout: 15) {
            last = BehindMountTests.differences(mount: m, container: c, capacity: 64 << 20)
            return last == nil
        }
        XCTAssertTrue(settled, "the verification repaired the ledger:\n  \(last ?? "")")
        let log = (try? String(contentsOfFile: c + "/.purgefs/daemon.log", encoding: .utf8)) ?? ""
        XCTAssertTrue(log.contains("verification repaired") && log.contains("caches/missed"),
                      "daemon.log names the repair of caches/missed:\n\(log)")
        XCTAssertTrue(log.contains("Documents/old"), "daemon.log names the repair of Documents/old:\n\(log)")
    }
}

/// An in-place mount names the processes it cannot cover, and what such a
/// process changes through the descriptor it kept is tracked.
final class BehindMountInPlaceTests: MountedTestCase {
    override var mountsInSetUp: Bool { false }

    func testInPlaceMountWarnsAboutProcessesInsideAndTracksTheirChanges() throws {
        let c = fixture.container
        makeDirectories(c, ["caches", "work"])
        let sleeper = try Subprocess.spawn(["sleep", "600"], cwd: c + "/work",
                                           stdoutPath: fixture.base + "/sleep.out", stderrPath: fixture.base + "/sleep.err")
        let sleeperPID = sleeper.processIdentifier
        addTeardownBlock {
            kill(sleeperPID, SIGKILL)
            sleeper.waitUntilExit()
        }
        // This process keeps a descriptor of the container's caches from before the mount.
        let held = open(c + "/caches", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(held, 0)
        defer { close(held) }
        try fixture.mount(options: ["capacity=64M"], inPlace: true)
        let stderr = fixture.daemonStderrText()
        let warnings = stderr.split(separator: "\n").filter { $0.contains("bypass the mount") }
        XCTAssertEqual(warnings.count, 1, "one warning line:\n\(stderr)")
        XCTAssertTrue(warnings.first?.contains("\(sleeperPID) (sleep)") == true, "names the sleeper:\n\(stderr)")
        XCTAssertTrue(warnings.first?.contains("\(getpid()) (") == true, "names this process, which holds a descriptor:\n\(stderr)")

        // Written through the old descriptor: behind the in-place mount.
        let fd = openat(held, "behind", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        XCTAssertGreaterThanOrEqual(fd, 0)
        let bytes = tiled(500_000, seed: 12)
        XCTAssertEqual(bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }, bytes.count)
        close(fd)
        var st = stat()
        XCTAssertEqual(fstatat(held, "behind", &st, 0), 0)
        let expected = String(UInt64(st.st_blocks) * 512)
        XCTAssertTrue(eventually(timeout: 10) {
            getAttr(c + "/caches", pf("purgeable")) == .value(expected) && getAttr(c + "/caches/behind", pf("size")) == .value("500000")
        }, "the file written behind the in-place mount is counted: caches purgeable \(getAttr(c + "/caches", pf("purgeable"))), expected \(expected)")
    }
}
