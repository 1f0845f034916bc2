import Foundation
import Glibc
import PurgeCore
import XCTest

/// The cloud tier on real mounts, the remote a directory beside the
/// container (`cloud=DIR`) or, in the subclasses of each suite, `rclone
/// serve s3` or `rclone serve webdav` over such a directory on 127.0.0.1
/// (`cloud=rclone:purgefs-test:PATH`). Either way `remote` is the directory
/// that holds `files/` and `incoming/`, so a test can look at the remote, or
/// change it as another device would, through the filesystem.
class CloudTestCase: PurgeTestCase {
    class var remoteKind: CloudRemoteKind { .directory }
    var server: RcloneServer?

    /// What the rclone servers serve: S3's buckets, WebDAV's root.
    var served: String { fixture.base + "/served" }

    var remote: String {
        switch Self.remoteKind {
        case .directory: return fixture.base + "/remote"
        case .s3: return served + "/bucket"
        case .webdav: return served + "/app"
        }
    }
    override var mountsInSetUp: Bool { false }

    override func setUpWithError() throws {
        try super.setUpWithError()
        guard Self.remoteKind != .directory else { return }
        if !FileManager.default.fileExists(atPath: remote) { XCTAssertEqual(mkdir(remote, 0o755), 0) }
        let server = try RcloneServer(Self.remoteKind, serving: served, scratch: fixture.base)
        self.server = server
        // The daemon's rclone finds the remote the way a user's would.
        setenv("RCLONE_CONFIG", server.configPath, 1)
    }

    override func tearDownWithError() throws {
        try super.tearDownWithError()
        stopServer()
        unsetenv("RCLONE_CONFIG")
    }

    /// Stops the rclone server: the remote goes away.
    func stopServer() {
        server?.stop()
        server = nil
    }

    override func prepareContainer() throws {
        if Self.remoteKind != .directory { XCTAssertEqual(mkdir(served, 0o755), 0) }
    }

    func cloudOptions(_ extra: [String] = []) -> [String] {
        let location: String
        switch Self.remoteKind {
        case .directory: location = remote
        case .s3: location = "rclone:\(RcloneServer.remoteName):bucket"
        case .webdav: location = "rclone:\(RcloneServer.remoteName):app"
        }
        return ["cloud=" + location] + (extra.contains { $0.hasPrefix("capacity=") } ? [] : ["capacity=256M"]) + extra
    }

    /// Waits for `user.purgefs.uploaded` to be 1.
    /// A document written through the mount (`relative`, with a leading
    /// slash), uploaded, then evicted: its path and the bytes it holds.
    func evictedDocument(_ relative: String, size: Int, seed: UInt64,
                         file: StaticString = #filePath, line: UInt = #line) -> (path: String, bytes: [UInt8]) {
        let path = fixture.mountpoint + relative
        let bytes = tiled(size, seed: seed)
        XCTAssertEqual(writeBytes(path, bytes), 0, file: file, line: line)
        waitUploaded(path, file: file, line: line)
        XCTAssertEqual(setAttr(path, pf("evict"), "1"), 0, file: file, line: line)
        return (path, bytes)
    }

    func waitUploaded(_ path: String, timeout: TimeInterval = 15, file: StaticString = #filePath, line: UInt = #line) {
        // Through rclone's servers an upload is four HTTP calls, each up to a second on a loaded machine.
        let timeout = Self.remoteKind == .directory ? timeout : timeout * 4
        XCTAssertTrue(eventually(timeout: timeout) { getAttr(path, pf("uploaded")) == .value("1") },
                      "\(path) uploaded; log: \(readPurgeLog(fixture.container).map { "\($0.reason) \($0.path)" })",
                      file: file, line: line)
    }

    /// Two uploaded 4 MiB documents, `old` used less recently than `recent`.
    func uploadTwo() {
        let m = fixture.mountpoint
        XCTAssertEqual(writeBytes(m + "/Documents/recent", tiled(4 * MiB, seed: 1)), 0)
        XCTAssertEqual(writeBytes(m + "/Documents/old", tiled(4 * MiB, seed: 2)), 0)
        waitUploaded(m + "/Documents/recent")
        waitUploaded(m + "/Documents/old")
        XCTAssertTrue(touchByReading(m + "/Documents/old"))
        XCTAssertTrue(touchByReading(m + "/Documents/recent"))
    }

    /// Writes `Documents/draft` and `Documents/final` (30,000 bytes each,
    /// the given seeds) through the mount and waits until both are uploaded.
    func uploadDraftAndFinal(seeds: (draft: UInt64, final: UInt64), file: StaticString = #filePath, line: UInt = #line) {
        let m = fixture.mountpoint
        XCTAssertEqual(writeBytes(m + "/Documents/draft", tiled(30_000, seed: seeds.draft)), 0, file: file, line: line)
        XCTAssertEqual(writeBytes(m + "/Documents/final", tiled(30_000, seed: seeds.final)), 0, file: file, line: line)
        waitUploaded(m + "/Documents/draft", file: file, line: line)
        waitUploaded(m + "/Documents/final", file: file, line: line)
    }

    /// The remote copy of a container path.
    func remoteCopy(_ relative: String) -> [UInt8]? { readBytes(remote + "/files/" + relative) }

    /// Bytes the backing file occupies.
    func backingBlocks(_ relative: String) -> Int {
        var status = stat()
        guard lstat(fixture.container + "/" + relative, &status) == 0 else { return -1 }
        return Int(status.st_blocks) * 512
    }
}

class CloudUploadEvictTests: CloudTestCase {
    override func prepareContainer() throws {
        try super.prepareContainer()
        makeDirectories(fixture.container, ["Documents", "other"])
        XCTAssertEqual(mkdir(remote, 0o755), 0)
    }

    func testUploadEvictThenReadBackTheSameBytes() throws {
        try fixture.mount(options: cloudOptions())
        let m = fixture.mountpoint
        let bytes = tiled(3 * MiB + 123, seed: 7)
        XCTAssertEqual(writeBytes(m + "/Documents/report.bin", bytes), 0)
        XCTAssertEqual(getAttr(m + "/Documents/report.bin", pf("ubiquitous")), .value("1"))
        waitUploaded(m + "/Documents/report.bin")
        XCTAssertTrue(remoteCopy("Documents/report.bin") == bytes, "the remote holds the content")
        XCTAssertEqual(getAttr(m + "/Documents/report.bin", pf("download_status")), .value("current"))
        let before = backingBlocks("Documents/report.bin")
        let rootAllocated = numberAttr(m, "allocated") ?? 0
        XCTAssertGreaterThan(before, 3 * MiB)

        XCTAssertEqual(setAttr(m + "/Documents/report.bin", pf("evict"), "1"), 0)
        XCTAssertEqual(backingBlocks("Documents/report.bin"), 0, "backing usage falls on evict")
        XCTAssertEqual(numberAttr(m + "/Documents/report.bin", "allocated"), 0)
        XCTAssertEqual(numberAttr(m, "allocated"), rootAllocated - UInt64(before), "the ledger's allocated drops")
        XCTAssertEqual(getAttr(m + "/Documents/report.bin", pf("download_status")), .value("not_downloaded"))
        XCTAssertEqual(getAttr(m + "/Documents/report.bin", pf("uploaded")), .value("1"))
        XCTAssertEqual(fileSize(m + "/Documents/report.bin"), Int64(bytes.count), "still listed with its size")
        XCTAssertTrue(eventually(timeout: 5) {
            var seen = stat()
            return stat(m + "/Documents/report.bin", &seen) == 0 && seen.st_blocks == 0
        }, "stat through the mount shows no blocks (the kernel's cache is told)")
        let log = readPurgeLog(fixture.container)
        XCTAssertEqual(log.map { "\($0.reason) \($0.action) \($0.path)" }, ["manual evict Documents/report.bin"])

        XCTAssertTrue(readBytes(m + "/Documents/report.bin") == bytes, "opening downloads it first")
        XCTAssertEqual(getAttr(m + "/Documents/report.bin", pf("download_status")), .value("current"))
        XCTAssertGreaterThan(backingBlocks("Documents/report.bin"), 3 * MiB)
    }

    func testEvictIsRefusedWhenNotUploadedOpenChangedOrOutsideAZone() throws {
        try fixture.mount(options: cloudOptions())
        let m = fixture.mountpoint
        XCTAssertEqual(writeBytes(m + "/other/plain", tiled(5000, seed: 1)), 0)
        XCTAssertEqual(setAttr(m + "/other/plain", pf("evict"), "1"), EINVAL, "outside a ubiquitous zone")
        XCTAssertEqual(getAttr(m + "/other/plain", pf("ubiquitous")), .value("0"))

        let doc = m + "/Documents/doc.txt"
        let bytes = tiled(20_000, seed: 2)
        // Held open from creation: never uploaded while open.
        let fd = open(doc, O_RDWR | O_CREAT, 0o644)
        XCTAssertGreaterThanOrEqual(fd, 0)
        XCTAssertEqual(bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }, bytes.count)
        XCTAssertEqual(setAttr(doc, pf("evict"), "1"), EBUSY, "not uploaded (and open)")
        close(fd)
        waitUploaded(doc)
        let reader = open(doc, O_RDONLY)
        XCTAssertEqual(setAttr(doc, pf("evict"), "1"), EBUSY, "open")
        close(reader)
        XCTAssertEqual(writeBytes(doc, tiled(20_001, seed: 3)), 0)
        if getAttr(doc, pf("uploaded")) == .value("0") {
            XCTAssertEqual(setAttr(doc, pf("evict"), "1"), EBUSY, "changed since its upload")
        }
        XCTAssertTrue(readBytes(doc) == tiled(20_001, seed: 3), "nothing removed")
        XCTAssertEqual(setAttr(doc, pf("evict"), "2"), EINVAL, "a bad value")
    }

    func testDeleteAndRenameReachTheRemote() throws {
        try fixture.mount(options: cloudOptions())
        let m = fixture.mountpoint
        for name in ["keep", "gone", "moved"] {
            XCTAssertEqual(writeBytes(m + "/Documents/" + name, tiled(9000, seed: UInt64(name.count))), 0)
        }
        for name in ["keep", "gone", "moved"] { waitUploaded(m + "/Documents/" + name) }
        XCTAssertEqual(unlink(m + "/Documents/gone"), 0)
        XCTAssertEqual(mkdir(m + "/Documents/sub", 0o755), 0)
        XCTAssertEqual(rename(m + "/Documents/moved", m + "/Documents/sub/renamed"), 0)
        XCTAssertTrue(eventually(timeout: Self.remoteKind == .directory ? 10 : 40) {
            remoteCopy("Documents/gone") == nil && remoteCopy("Documents/moved") == nil
                && remoteCopy("Documents/sub/renamed") == tiled(9000, seed: 5)
        }, "the remote follows")
        // Uploaded once the daemon has recorded the rename as done (the remote moves first).
        waitUploaded(m + "/Documents/sub/renamed")
        XCTAssertTrue(remoteCopy("Documents/keep") == tiled(9000, seed: 4))
    }

    /// Deletes and renames made while the container was not mounted reach the
    /// remote at the next mount (`CloudReconcile`'s `removeRemote` and
    /// `renameRemote`), and the old names are not brought back as placeholders.
    func testDeletesAndRenamesWhileUnmountedReachTheRemoteAtMount() throws {
        try fixture.mount(options: cloudOptions())
        for name in ["keep", "gone", "moved"] {
            XCTAssertEqual(writeBytes(fixture.mountpoint + "/Documents/" + name, tiled(9000, seed: UInt64(name.count))), 0)
        }
        for name in ["keep", "gone", "moved"] { waitUploaded(fixture.mountpoint + "/Documents/" + name) }
        for problem in fixture.unmount() { XCTFail(problem) }
        let backing = fixture.container + "/Documents/"
        XCTAssertEqual(unlink(backing + "gone"), 0)
        XCTAssertEqual(mkdir(backing + "sub", 0o755), 0)
        XCTAssertEqual(rename(backing + "moved", backing + "sub/renamed"), 0)
        try fixture.mount(options: cloudOptions())
        let m = fixture.mountpoint
        XCTAssertTrue(eventually(timeout: Self.remoteKind == .directory ? 10 : 40) {
            remoteCopy("Documents/gone") == nil && remoteCopy("Documents/moved") == nil
                && remoteCopy("Documents/sub/renamed") == tiled(9000, seed: 5)
        }, "the remote follows")
        XCTAssertFalse(FileManager.default.fileExists(atPath: m + "/Documents/gone"), "not shown again")
        XCTAssertFalse(FileManager.default.fileExists(atPath: m + "/Documents/moved"), "not shown again")
        // Its record followed: uploaded once the daemon has recorded the rename as done.
        waitUploaded(m + "/Documents/sub/renamed")
        XCTAssertTrue(remoteCopy("Documents/keep") == tiled(9000, seed: 4))
    }

    func testAFreshContainerSeesTheRemoteDocumentsNotDownloaded() throws {
        try fixture.mount(options: cloudOptions())
        let bytes = tiled(2 * MiB + 5, seed: 11)
        makeDirectories(fixture.mountpoint, ["Documents/deep"])
        XCTAssertEqual(writeBytes(fixture.mountpoint + "/Documents/deep/photo", bytes, mode: 0o640), 0)
        waitUploaded(fixture.mountpoint + "/Documents/deep/photo")
        for problem in fixture.unmount() { XCTFail(problem) }

        // A second device: an empty container against the same remote.
        let device = try MountFixture()
        defer { for problem in device.destroy() { XCTFail("teardown: \(problem)") } }
        try device.mount(options: cloudOptions())
        let photo = device.mountpoint + "/Documents/deep/photo"
        XCTAssertEqual(fileSize(photo), Int64(bytes.count))
        XCTAssertEqual(getAttr(photo, pf("download_status")), .value("not_downloaded"))
        XCTAssertEqual(getAttr(photo, pf("uploaded")), .value("1"))
        XCTAssertEqual(numberAttr(photo, "allocated"), 0)
        var status = stat()
        XCTAssertEqual(stat(photo, &status), 0)
        if Self.remoteKind.keepsModes { XCTAssertEqual(status.st_mode & 0o777, 0o640, "its mode") }
        XCTAssertEqual(setAttr(photo, pf("download"), "1"), 0)
        XCTAssertTrue(eventually(timeout: 10) { getAttr(photo, pf("download_status")) == .value("current") })
        XCTAssertTrue(readBytes(photo) == bytes)
    }

    /// The daemon is killed while an upload's copy is in `incoming`: a copy
    /// still there after the kill proves the upload never finished. A try
    /// whose copy was renamed into place before the kill landed goes again
    /// with a fresh file (at most 4 tries). Every file converges after the
    /// remount.
    func testKillDuringAnUploadThenRemountConverges() throws {
        try fixture.mount(options: cloudOptions())
        let m = fixture.mountpoint
        let incoming = remote + "/incoming"
        func inIncoming() -> Set<String> { Set((try? FileManager.default.contentsOfDirectory(atPath: incoming)) ?? []) }
        XCTAssertEqual(writeBytes(m + "/Documents/small", tiled(100, seed: 22)), 0)
        var files: [String: [UInt8]] = ["Documents/small": tiled(100, seed: 22)]
        var midUpload = false
        for attempt in 1...4 where !midUpload {
            let name = "Documents/big\(attempt)"
            let bytes = tiled(24 * MiB, seed: UInt64(20 + attempt))
            let before = inIncoming()
            XCTAssertEqual(writeBytes(m + "/" + name, bytes), 0)
            files[name] = bytes
            // After the debounce; polled tightly, the copy takes milliseconds.
            let deadline = Date().addingTimeInterval(10)
            while inIncoming().subtracting(before).isEmpty, Date() < deadline { usleep(500) }
            fixture.killDaemon()
            let started = inIncoming().subtracting(before)
            midUpload = !started.isEmpty
            print("CloudTierTests: try \(attempt) killed \(midUpload ? "during the upload of \(started.sorted())" : "after the upload")")
            try fixture.mount(options: cloudOptions())
        }
        XCTAssertTrue(midUpload, "in 4 tries no kill -9 landed while an upload was under way")
        for (name, bytes) in files.sorted(by: { $0.key < $1.key }) {
            waitUploaded(m + "/" + name)
            XCTAssertTrue(remoteCopy(name) == bytes, "\(name)'s remote copy")
            XCTAssertTrue(readBytes(m + "/" + name) == bytes, "\(name) through the mount")
        }
    }

    /// What a killed upload left in `incoming` goes at the next mount once it
    /// is an hour old; a younger one may be another device's upload under way.
    func testStaleUploadsAreRemovedAtMount() throws {
        for name in ["incoming", "files"] { XCTAssertEqual(mkdir(remote + "/" + name, 0o755), 0) }
        XCTAssertEqual(writeBytes(remote + "/incoming/123-1", tiled(100, seed: 23)), 0)
        XCTAssertEqual(writeBytes(remote + "/incoming/456-2", tiled(100, seed: 24)), 0)
        var old = [timespec(tv_sec: time(nil) - 7200, tv_nsec: 0), timespec(tv_sec: time(nil) - 7200, tv_nsec: 0)]
        XCTAssertEqual(utimensat(AT_FDCWD, remote + "/incoming/123-1", &old, 0), 0)
        try fixture.mount(options: cloudOptions())
        XCTAssertFalse(FileManager.default.fileExists(atPath: remote + "/incoming/123-1"), "a two-hour-old leftover")
        XCTAssertTrue(FileManager.default.fileExists(atPath: remote + "/incoming/456-2"), "a fresh upload of another device")
    }

    func testEvictedStateSurvivesKillAndRemount() throws {
        try fixture.mount(options: cloudOptions())
        let m = fixture.mountpoint
        let bytes = tiled(MiB + 1, seed: 31)
        XCTAssertEqual(writeBytes(m + "/Documents/e", bytes), 0)
        waitUploaded(m + "/Documents/e")
        XCTAssertEqual(setAttr(m + "/Documents/e", pf("evict"), "1"), 0)
        fixture.killDaemon()
        try fixture.mount(options: cloudOptions())
        XCTAssertEqual(getAttr(m + "/Documents/e", pf("download_status")), .value("not_downloaded"))
        XCTAssertEqual(numberAttr(m, "allocated"), 0)
        XCTAssertTrue(readBytes(m + "/Documents/e") == bytes)
    }

    func testKillDuringADownloadThenRemountConverges() throws {
        try fixture.mount(options: cloudOptions())
        let m = fixture.mountpoint
        let bytes = tiled(48 * MiB, seed: 51)
        XCTAssertEqual(writeBytes(m + "/Documents/movie", bytes), 0)
        waitUploaded(m + "/Documents/movie", timeout: 30)
        XCTAssertEqual(setAttr(m + "/Documents/movie", pf("evict"), "1"), 0)
        // A reader in another process opens it (downloading); the daemon dies as soon as data arrives.
        let reader = try Subprocess.spawn(["cat", m + "/Documents/movie"], stdoutPath: "/dev/null", stderrPath: "/dev/null")
        let deadline = Date().addingTimeInterval(30)
        while backingBlocks("Documents/movie") == 0 && reader.isRunning && Date() < deadline { usleep(500) }
        fixture.killDaemon()
        Subprocess.wait(reader, timeout: 10)
        // What the dead daemon left: part of the data, so the kill landed during the download.
        let left = backingBlocks("Documents/movie")
        XCTAssertGreaterThan(left, 0, "the download had begun when the daemon was killed")
        XCTAssertLessThan(left, bytes.count, "the download had not finished when the daemon was killed")
        try fixture.mount(options: cloudOptions())
        XCTAssertTrue(readBytes(m + "/Documents/movie") == bytes, "every byte, downloaded again if cut short")
        XCTAssertTrue(remoteCopy("Documents/movie") == bytes, "the remote copy untouched")
        XCTAssertEqual(getAttr(m + "/Documents/movie", pf("uploaded")), .value("1"))
    }

    func testAPartialDownloadLeftByACrashIsNotUploaded() throws {
        try fixture.mount(options: cloudOptions())
        let m = fixture.mountpoint
        let bytes = tiled(MiB, seed: 61)
        XCTAssertEqual(writeBytes(m + "/Documents/p", bytes), 0)
        waitUploaded(m + "/Documents/p")
        XCTAssertEqual(setAttr(m + "/Documents/p", pf("evict"), "1"), 0)
        for problem in fixture.unmount() { XCTFail(problem) }
        // What a download killed half way leaves: the same inode, part of the data, a new mtime.
        let fd = open(fixture.container + "/Documents/p", O_WRONLY)
        XCTAssertEqual(Array(bytes.prefix(4096)).withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }, 4096)
        close(fd)
        try fixture.mount(options: cloudOptions())
        XCTAssertEqual(getAttr(m + "/Documents/p", pf("download_status")), .value("not_downloaded"))
        XCTAssertEqual(getAttr(m + "/Documents/p", pf("uploaded")), .value("1"))
        XCTAssertTrue(readBytes(m + "/Documents/p") == bytes)
        XCTAssertTrue(remoteCopy("Documents/p") == bytes)
    }

    func testANewerRemoteVersionShowsAsDownloadedAndComesWithTheNextDownload() throws {
        try fixture.mount(options: cloudOptions())
        let doc = fixture.mountpoint + "/Documents/shared"
        XCTAssertEqual(writeBytes(doc, tiled(10_000, seed: 81)), 0)
        waitUploaded(doc)
        XCTAssertEqual(getAttr(doc, pf("download_status")), .value("current"))
        // Another device uploads a new version, the way purgefs does: aside, then renamed into place.
        let newer = tiled(25_000, seed: 82)
        _ = mkdir(remote + "/incoming", 0o755)  // an object store keeps no empty directory
        XCTAssertEqual(writeBytes(remote + "/incoming/other-device", newer), 0)
        XCTAssertEqual(rename(remote + "/incoming/other-device", remote + "/files/Documents/shared"), 0)
        // A directory remote shows it at once; rclone's server once its directory cache (RcloneServer: 100 ms) expires.
        XCTAssertTrue(eventually(timeout: Self.remoteKind == .directory ? 0 : 5) {
            getAttr(doc, pf("download_status")) == .value("downloaded")
        }, "the newer remote version shows as downloaded: \(getAttr(doc, pf("download_status")))")
        XCTAssertTrue(readBytes(doc) == tiled(10_000, seed: 81), "the local copy stays until it is downloaded again")
        XCTAssertEqual(setAttr(doc, pf("evict"), "1"), 0)
        // Its size changes with it: the kernel learns that from a notice of its own, so poll.
        XCTAssertTrue(eventually(timeout: 5) { readBytes(doc) == newer }, "the next download brings the newer version")
        XCTAssertEqual(getAttr(doc, pf("download_status")), .value("current"))
        XCTAssertEqual(getAttr(doc, pf("uploaded")), .value("1"))
        XCTAssertEqual(fileSize(doc), Int64(newer.count))
    }

    func testTouchingAnEvictedFileDownloadsItFirst() throws {
        try fixture.mount(options: cloudOptions())
        let (doc, bytes) = evictedDocument("/Documents/t", size: 300_000, seed: 71)
        XCTAssertEqual(utimes(doc, nil), 0)
        XCTAssertEqual(getAttr(doc, pf("download_status")), .value("current"))
        waitUploaded(doc)
        XCTAssertTrue(remoteCopy("Documents/t") == bytes, "the remote never gets a hole")
        XCTAssertTrue(readBytes(doc) == bytes)
    }

    /// Another device uploads while this container is mounted: its documents
    /// appear (not downloaded) within a poll of the remote, in directories
    /// made for them; a local file of the same name is left alone.
    func testDocumentsAnotherDeviceAddsAppearWhileMounted() throws {
        setenv("PURGEFS_REMOTE_POLL", "1", 1)
        defer { unsetenv("PURGEFS_REMOTE_POLL") }
        try fixture.mount(options: cloudOptions())
        let m = fixture.mountpoint
        XCTAssertEqual(writeBytes(m + "/Documents/mine", tiled(300, seed: 93)), 0)
        waitUploaded(m + "/Documents/mine")
        XCTAssertFalse(FileManager.default.fileExists(atPath: m + "/Documents/sub/theirs"), "looked up before it exists")
        let theirs = tiled(70_000, seed: 94)
        XCTAssertEqual(mkdir(remote + "/files/Documents/sub", 0o755), 0)
        XCTAssertEqual(writeBytes(remote + "/files/Documents/sub/theirs", theirs), 0)
        XCTAssertTrue(eventually(timeout: 15) { FileManager.default.fileExists(atPath: m + "/Documents/sub/theirs") },
                      "the other device's document appears")
        XCTAssertEqual(getAttr(m + "/Documents/sub/theirs", pf("download_status")), .value("not_downloaded"))
        XCTAssertEqual(numberAttr(m + "/Documents/sub/theirs", "allocated"), 0)
        XCTAssertEqual(numberAttr(m + "/Documents", "files"), 2)
        XCTAssertTrue(readBytes(m + "/Documents/sub/theirs") == theirs, "opening downloads it")
        XCTAssertEqual(getAttr(m + "/Documents/sub/theirs", pf("download_status")), .value("current"))
        XCTAssertEqual(numberAttr(m, "size"), UInt64(300 + 70_000))
    }

    /// Changes made without opening the file (truncate by path, a hard link
    /// into a zone) reach the remote after the debounce, not at the next
    /// walk of the zones (a minute).
    func testTruncateByPathAndHardLinksAreUploaded() throws {
        try fixture.mount(options: cloudOptions())
        let m = fixture.mountpoint
        XCTAssertEqual(writeBytes(m + "/Documents/cut", tiled(9000, seed: 95)), 0)
        waitUploaded(m + "/Documents/cut")
        XCTAssertEqual(truncate(m + "/Documents/cut", 1000), 0)
        XCTAssertTrue(eventually(timeout: 15) { self.remoteCopy("Documents/cut")?.count == 1000 },
                      "the truncated document uploaded: \(remoteCopy("Documents/cut")?.count ?? -1) bytes remote")
        XCTAssertEqual(writeBytes(m + "/other/linked", tiled(700, seed: 96)), 0)
        XCTAssertEqual(link(m + "/other/linked", m + "/Documents/linked"), 0)
        XCTAssertTrue(eventually(timeout: 15) { self.remoteCopy("Documents/linked") == tiled(700, seed: 96) },
                      "a hard link into the zone uploaded")
    }

    func testOpeningAnEvictedFileWithoutItsRemoteCopyIsAnIOError() throws {
        try fixture.mount(options: cloudOptions())
        let doc = fixture.mountpoint + "/Documents/lost"
        XCTAssertEqual(writeBytes(doc, tiled(5000, seed: 41)), 0)
        waitUploaded(doc)
        XCTAssertEqual(setAttr(doc, pf("evict"), "1"), 0)
        XCTAssertEqual(unlink(remote + "/files/Documents/lost"), 0)
        XCTAssertEqual(open(doc, O_RDONLY), -1)
        XCTAssertEqual(errno, EIO)
        XCTAssertTrue(readPurgeLog(fixture.container).contains { $0.reason == "download-failed" && $0.path == "Documents/lost" })
        XCTAssertEqual(getAttr(doc, pf("download_status")), .value("not_downloaded"))
    }

    /// A new version of the same size replaces the remote copy (a store may
    /// judge two files by their size alone, and keep the old one).
    func testANewVersionOfTheSameSizeReplacesTheRemoteCopy() throws {
        try fixture.mount(options: cloudOptions())
        let doc = fixture.mountpoint + "/Documents/same-size"
        XCTAssertEqual(writeBytes(doc, tiled(40_000, seed: 11)), 0)
        waitUploaded(doc)
        XCTAssertEqual(writeBytes(doc, tiled(40_000, seed: 12)), 0)
        waitUploaded(doc)
        XCTAssertTrue(remoteCopy("Documents/same-size") == tiled(40_000, seed: 12), "the remote holds the new version")
        XCTAssertEqual(setAttr(doc, pf("evict"), "1"), 0)
        XCTAssertTrue(readBytes(doc) == tiled(40_000, seed: 12), "the download brings the new version back")
    }

    /// A rename over a document of the same size replaces its remote copy.
    func testARenameOverADocumentOfTheSameSizeReplacesItsRemoteCopy() throws {
        try fixture.mount(options: cloudOptions())
        let m = fixture.mountpoint
        uploadDraftAndFinal(seeds: (13, 14))
        XCTAssertEqual(rename(m + "/Documents/draft", m + "/Documents/final"), 0)
        XCTAssertTrue(eventually(timeout: Self.remoteKind == .directory ? 5 : 20) {
            self.remoteCopy("Documents/draft") == nil && self.remoteCopy("Documents/final") == tiled(30_000, seed: 13)
        }, "the remote copy renamed over the other")
        waitUploaded(m + "/Documents/final")
        XCTAssertEqual(setAttr(m + "/Documents/final", pf("evict"), "1"), 0)
        XCTAssertTrue(readBytes(m + "/Documents/final") == tiled(30_000, seed: 13), "the download brings the renamed version")
    }

    /// A writer that opens a document while its upload is under way (held
    /// at its start by a delay rule on `upload`) leaves it half new, half
    /// old when the copy is taken: that copy never reaches `files`, and the
    /// next upload, after the writer's close, brings the whole new version.
    func testADocumentWrittenDuringItsUploadNeverLandsTorn() throws {
        try fixture.mount(options: cloudOptions())
        let doc = fixture.mountpoint + "/Documents/torn"
        let chunk = 256 << 10
        let old = [UInt8](repeating: 1, count: 8 * chunk), new = [UInt8](repeating: 2, count: 8 * chunk)
        let rule = try Subprocess.run([fixture.binary, "fault", "add", fixture.mountpoint, "--op", "upload",
                                       "--path", "Documents/torn", "--delay", "3s", "--times", "1"], timeout: 30)
        XCTAssertEqual(rule.status, 0, "\(rule)")
        XCTAssertEqual(writeBytes(doc, old), 0)  // its upload starts a second after this close, then waits 3 s
        usleep(2_000_000)
        let opened = Date().timeIntervalSince1970
        let fd = open(doc, O_WRONLY)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { if fd >= 0 { close(fd) } }
        XCTAssertEqual(new.withUnsafeBytes { pwrite(fd, $0.baseAddress, chunk, 0) }, chunk)
        var seen: [[UInt8]?] = []
        func look() { seen.append(remoteCopy("Documents/torn")) }
        // The copy is taken once the delay ends; it lands (or not) soon after.
        XCTAssertTrue(eventually(timeout: 10) { look(); return delayEnded() != nil }, "the upload's delay ended")
        for _ in 0..<50 { look(); usleep(40_000) }
        XCTAssertEqual(new.withUnsafeBytes { pwrite(fd, $0.baseAddress! + chunk, new.count - chunk, chunk) },
                       new.count - chunk)
        XCTAssertEqual(close(fd), 0)
        XCTAssertTrue(eventually(timeout: Self.remoteKind == .directory ? 15 : 60) {
            look(); return remoteCopy("Documents/torn") == new
        }, "the whole new version uploaded")
        let ended = try XCTUnwrap(delayEnded())
        XCTAssertTrue(ended - 3.5 < opened && opened < ended,
                      "the writer opened while the upload waited: opened at \(opened), the delay ended at \(ended)")
        let torn = seen.compactMap { $0 }.filter { $0 != new && $0 != old }
        XCTAssertTrue(torn.isEmpty, "\(torn.count) of \(seen.count) looks at the remote saw a torn copy")
    }

    /// When the upload's delay rule fired (its record is written as the delay ends).
    private func delayEnded() -> Double? {
        guard let log = try? Subprocess.run([fixture.binary, "log", fixture.mountpoint, "--faults", "--json"], timeout: 30)
        else { return nil }
        for line in log.stdout.split(separator: "\n") {
            guard let record = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  record["op"] as? String == "upload", (record["result"] as? String)?.hasPrefix("delayed") == true
            else { continue }
            return record["time"] as? Double
        }
        return nil
    }
}

/// What only a directory remote can be made to do: be a regular file, a
/// read-only mount, a FIFO in place of a document, a hung FUSE mount. (For
/// rclone's remotes, a server that goes away is in `CloudUploadEvictS3Tests`
/// and `CloudUploadEvictWebDAVTests`, slow and failing transfers in
/// `CloudNetworkFaultS3Tests` and `CloudNetworkFaultWebDAVTests`.)
final class CloudDirectoryRemoteTests: CloudTestCase {
    override func prepareContainer() throws {
        makeDirectories(fixture.container, ["Documents", "other"])
        XCTAssertEqual(mkdir(remote, 0o755), 0)
    }

    func testEvictIsRefusedWhileTheRemoteIsUnusable() throws {
        // The remote is a regular file: every upload fails, local work goes on.
        XCTAssertEqual(rmdir(remote), 0)
        XCTAssertEqual(writeBytes(remote, [1, 2, 3]), 0)
        try fixture.mount(options: cloudOptions())
        let doc = fixture.mountpoint + "/Documents/a.txt"
        XCTAssertEqual(writeBytes(doc, tiled(10_000, seed: 4)), 0)
        XCTAssertTrue(eventually(timeout: 15) { readPurgeLog(fixture.container).contains { $0.reason == "upload-failed" } },
                      "the failure is in the log")
        XCTAssertEqual(getAttr(doc, pf("uploaded")), .value("0"))
        XCTAssertEqual(setAttr(doc, pf("evict"), "1"), EBUSY)
        XCTAssertTrue(readBytes(doc) == tiled(10_000, seed: 4))
        XCTAssertEqual(writeBytes(fixture.mountpoint + "/Documents/b.txt", [9]), 0, "local work is not blocked")
    }

    func testAReadOnlyRemoteKeepsFilesLocalAndRefusesEviction() throws {
        // The remote is a read-only bind mount of a directory: every upload gets EROFS.
        let writable = fixture.base + "/remote-rw"
        XCTAssertEqual(mkdir(writable, 0o755), 0)
        XCTAssertEqual(try Subprocess.run(["mount", "--bind", writable, remote]).status, 0)
        defer { _ = try? Subprocess.run(["umount", remote]) }
        XCTAssertEqual(try Subprocess.run(["mount", "-o", "remount,bind,ro", remote]).status, 0)
        try fixture.mount(options: cloudOptions())
        let doc = fixture.mountpoint + "/Documents/ro.txt"
        XCTAssertEqual(writeBytes(doc, tiled(10_000, seed: 5)), 0)
        XCTAssertTrue(eventually(timeout: 15) { readPurgeLog(fixture.container).contains { $0.reason == "upload-failed" } },
                      "the failure is in the log")
        XCTAssertEqual(getAttr(doc, pf("uploaded")), .value("0"))
        XCTAssertEqual(setAttr(doc, pf("evict"), "1"), EBUSY)
        XCTAssertTrue(readBytes(doc) == tiled(10_000, seed: 5))
        for problem in fixture.unmount() { XCTFail(problem) }
        XCTAssertEqual(try Subprocess.run(["umount", remote]).status, 0)
        // Writable again: the pending upload resumes at the next mount.
        try fixture.mount(options: cloudOptions())
        waitUploaded(doc)
        XCTAssertTrue(remoteCopy("Documents/ro.txt") == tiled(10_000, seed: 5))
    }

    /// Before an eviction drops the only local data, the remote is asked
    /// for the copy the manifest records, whatever the manifest says: with
    /// that copy deleted behind purgefs's back, then moved to another
    /// name, `evict` is refused (`EBUSY`), the data
    /// stays, the daemon log says why, and the document is uploaded again.
    func testEvictionIsRefusedWhenTheRemoteLacksTheRecordedCopy() throws {
        try fixture.mount(options: cloudOptions())
        let doc = fixture.mountpoint + "/Documents/kept"
        let bytes = tiled(20_000, seed: 91)
        XCTAssertEqual(writeBytes(doc, bytes), 0)
        waitUploaded(doc)
        let copy = remote + "/files/Documents/kept"
        XCTAssertEqual(unlink(copy), 0, "the store loses its copy; the manifest still says uploaded")
        XCTAssertEqual(getAttr(doc, pf("uploaded")), .value("1"))
        XCTAssertEqual(setAttr(doc, pf("evict"), "1"), EBUSY)
        XCTAssertGreaterThan(backingBlocks("Documents/kept"), 0, "the data stays")
        XCTAssertTrue(readBytes(doc) == bytes)
        XCTAssertTrue(eventually(timeout: 10) {
            fixture.daemonStderrText().contains("kept cannot be evicted now: the remote holds no copy where")
        }, fixture.daemonStderrText())
        XCTAssertTrue(eventually(timeout: 15) { remoteCopy("Documents/kept") == bytes }, "uploaded again")
        waitUploaded(doc)
        // Moved to another name behind purgefs's back: none under the document's name.
        XCTAssertEqual(rename(copy, remote + "/files/Documents/elsewhere"), 0)
        XCTAssertEqual(setAttr(doc, pf("evict"), "1"), EBUSY)
        XCTAssertTrue(readBytes(doc) == bytes)
        XCTAssertTrue(eventually(timeout: 15) { remoteCopy("Documents/kept") == bytes }, "uploaded again")
        waitUploaded(doc)
        XCTAssertEqual(setAttr(doc, pf("evict"), "1"), 0, "the store holds its copy again")
        XCTAssertEqual(backingBlocks("Documents/kept"), 0)
        XCTAssertTrue(readBytes(doc) == bytes, "and it downloads")
    }

    /// `optimize_storage`'s eviction checks the remote's copy too: the
    /// least recently used document, whose copy the store lost, is kept
    /// (and uploaded again), and the write evicts the other one instead.
    func testEvictionForRoomSkipsADocumentTheRemoteLacks() throws {
        try fixture.mount(options: cloudOptions(["optimize_storage", "capacity=12M", "low=0", "high=0"]))
        let m = fixture.mountpoint
        uploadTwo()
        XCTAssertEqual(unlink(remote + "/files/Documents/old"), 0)
        XCTAssertEqual(writeBytes(m + "/other/new", tiled(6 * MiB, seed: 3)), 0, "fits once a document is evicted")
        XCTAssertEqual(readPurgeLog(fixture.container).filter { $0.action == "evict" }.map { "\($0.reason) \($0.path)" },
                       ["write Documents/recent"])
        XCTAssertGreaterThan(backingBlocks("Documents/old"), 0, "the document the remote lacks keeps its data")
        XCTAssertTrue(eventually(timeout: 15) { remoteCopy("Documents/old") == tiled(4 * MiB, seed: 2) }, "and is uploaded again")
    }

    func testAnOpenWaitsForAHungRemoteOnlyABoundedTime() throws {
        // The daemon's deadline for an open's download, from its environment.
        setenv("PURGEFS_DOWNLOAD_TIMEOUT", "1", 1)
        defer { unsetenv("PURGEFS_DOWNLOAD_TIMEOUT") }
        try fixture.mount(options: cloudOptions())
        let doc = fixture.mountpoint + "/Documents/hung"
        XCTAssertEqual(writeBytes(doc, tiled(5000, seed: 91)), 0)
        waitUploaded(doc)
        XCTAssertEqual(setAttr(doc, pf("evict"), "1"), 0)
        // A FIFO in place of the remote copy: opening it blocks until a writer comes, like a hung server.
        let copy = remote + "/files/Documents/hung"
        XCTAssertEqual(unlink(copy), 0)
        XCTAssertEqual(mkfifo(copy, 0o644), 0)
        XCTAssertEqual(open(doc, O_RDONLY), -1)
        XCTAssertEqual(errno, EIO)
        XCTAssertTrue(readPurgeLog(fixture.container).contains { $0.reason == "download-failed" && $0.path == "Documents/hung" })
        // The server "answers" with nothing: the transfer fails, the file stays evicted.
        let writer = open(copy, O_WRONLY)
        XCTAssertGreaterThanOrEqual(writer, 0)
        close(writer)
        XCTAssertTrue(eventually(timeout: 10) {
            readPurgeLog(fixture.container).filter { $0.reason == "download-failed" }.count >= 2
        }, "the background transfer ends and says why")
        XCTAssertEqual(getAttr(doc, pf("download_status")), .value("not_downloaded"))
        XCTAssertEqual(numberAttr(doc, "allocated"), 0)
    }

    /// The remote is itself a FUSE mount (a second purgefs) whose daemon is
    /// stopped: every call into it hangs. Reading `download_status` still
    /// answers within its deadline, as for a remote that cannot be reached.
    func testDownloadStatusAnswersWhileTheRemoteHangs() throws {
        let remoteBacking = fixture.base + "/remote-backing"
        XCTAssertEqual(mkdir(remoteBacking, 0o755), 0)
        XCTAssertEqual(rmdir(remote), 0)
        XCTAssertEqual(mkdir(remote, 0o755), 0)
        let mounted = try Subprocess.run([fixture.binary, "mount", remoteBacking, remote], timeout: 30)
        XCTAssertEqual(mounted.status, 0, "\(mounted)")
        let remoteDaemon = fixture.ownProcesses().filter { pid in
            (try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8))?.contains(remoteBacking) == true
        }
        XCTAssertEqual(remoteDaemon.count, 1)
        addTeardownBlock { [self] in
            for pid in remoteDaemon { kill(pid, SIGCONT) }
            _ = unmountPurgefsMounts(at: [fixture.mountpoint, remote])
        }
        try fixture.mount(options: cloudOptions())
        let doc = fixture.mountpoint + "/Documents/far"
        XCTAssertEqual(writeBytes(doc, tiled(5000, seed: 92)), 0)
        waitUploaded(doc)
        for pid in remoteDaemon { XCTAssertEqual(kill(pid, SIGSTOP), 0) }
        let start = Date()
        XCTAssertEqual(getAttr(doc, pf("download_status")), .value("current"))
        XCTAssertLessThan(Date().timeIntervalSince(start), 20, "download_status waited for the hung remote")
        for pid in remoteDaemon { XCTAssertEqual(kill(pid, SIGCONT), 0) }
    }
}

/// `optimize_storage`: uploaded documents are evicted, least recently used
/// first, when nothing purgeable is left, by the monitor and before a write
/// gets `ENOSPC`.
class CloudOptimizeStorageTests: CloudTestCase {
    override func prepareContainer() throws {
        try super.prepareContainer()
        makeDirectories(fixture.container, ["Documents", "other"])
        XCTAssertEqual(mkdir(remote, 0o755), 0)
    }

    func testTheMonitorEvictsLeastRecentlyUsedDocumentsUnderPressure() throws {
        try fixture.mount(options: cloudOptions(["optimize_storage", "capacity=32M", "low=3M", "high=5M"]))
        uploadTwo()
        let m = fixture.mountpoint
        XCTAssertEqual(setAttr(m, pf("capacity"), "10M"), 0, "squeeze: 2 MiB available, below low")
        XCTAssertTrue(eventually(timeout: 10) { getAttr(m + "/Documents/old", pf("download_status")) == .value("not_downloaded") })
        XCTAssertTrue(eventually(timeout: 5) { (numberAttr(m, "available") ?? 0) >= 5 << 20 })
        XCTAssertEqual(getAttr(m + "/Documents/recent", pf("download_status")), .value("current"), "only as much as needed")
        XCTAssertEqual(readPurgeLog(fixture.container).filter { $0.action == "evict" }.map { "\($0.reason) \($0.path)" },
                       ["monitor Documents/old"])
        XCTAssertTrue(readBytes(m + "/Documents/old") == tiled(4 * MiB, seed: 2), "downloads again when room is made")
    }

    func testAWriteEvictsBeforeENOSPC() throws {
        try fixture.mount(options: cloudOptions(["optimize_storage", "capacity=12M", "low=0", "high=0"]))
        uploadTwo()
        let m = fixture.mountpoint
        XCTAssertEqual(writeBytes(m + "/other/new", tiled(6 * MiB, seed: 3)), 0, "fits once a document is evicted")
        XCTAssertEqual(getAttr(m + "/Documents/old", pf("download_status")), .value("not_downloaded"))
        XCTAssertEqual(getAttr(m + "/Documents/recent", pf("download_status")), .value("current"))
        XCTAssertEqual(readPurgeLog(fixture.container).filter { $0.action == "evict" }.map { "\($0.reason) \($0.path)" },
                       ["write Documents/old"])
    }

    /// The check of the remote's copy while a read of that copy's status
    /// is under way (a `download_status`, held up here by a delay rule on
    /// `remote-list`, as a slow S3 remote holds up every read): it waits for
    /// that read and asks again, so the least recently used document is
    /// still the one evicted. It used to find the read under way, give up
    /// at once, and evict the other document instead.
    func testAWriteMakingRoomWaitsForAStatusReadUnderWay() throws {
        try fixture.mount(options: cloudOptions(["optimize_storage", "capacity=12M", "low=0", "high=0"]))
        uploadTwo()
        let m = fixture.mountpoint
        let added = try Subprocess.run([fixture.binary, "fault", "add", m, "--op", "remote-list",
                                        "--path", "Documents/old", "--delay", "8s", "--times", "1"], timeout: 30)
        XCTAssertEqual(added.status, 0, "\(added)")
        func delayEnded() -> Bool {
            (try? Subprocess.run([fixture.binary, "log", m, "--faults", "--json"], timeout: 30))?.stdout.contains("delayed") == true
        }
        // Gives up after its 2 s; the read it began goes on for the rest of the 8 s.
        _ = getAttr(m + "/Documents/old", pf("download_status"))
        XCTAssertFalse(delayEnded(), "the status read is still under way when the write begins")
        XCTAssertEqual(writeBytes(m + "/other/new", tiled(6 * MiB, seed: 3)), 0, "fits once a document is evicted")
        XCTAssertTrue(delayEnded(), "the write waited for the read")
        XCTAssertEqual(readPurgeLog(fixture.container).filter { $0.action == "evict" }.map { "\($0.reason) \($0.path)" },
                       ["write Documents/old"])
        XCTAssertEqual(getAttr(m + "/Documents/recent", pf("download_status")), .value("current"))
    }

    func testADownloadThatDoesNotFitEvictsAnotherDocument() throws {
        try fixture.mount(options: cloudOptions(["optimize_storage", "capacity=12M", "low=0", "high=0"]))
        uploadTwo()
        let m = fixture.mountpoint
        XCTAssertEqual(setAttr(m + "/Documents/old", pf("evict"), "1"), 0)
        XCTAssertEqual(writeBytes(m + "/other/filler", tiled(7 * MiB, seed: 4)), 0, "7 of the 8 MiB left")
        XCTAssertTrue(readBytes(m + "/Documents/old") == tiled(4 * MiB, seed: 2), "room made by evicting the other")
        XCTAssertEqual(getAttr(m + "/Documents/recent", pf("download_status")), .value("not_downloaded"))
        XCTAssertEqual(readPurgeLog(fixture.container).filter { $0.action == "evict" }.map { "\($0.reason) \($0.path)" },
                       ["manual Documents/old", "write Documents/recent"])
    }

    func testWithoutOptimizeStorageNothingIsEvicted() throws {
        try fixture.mount(options: cloudOptions(["capacity=12M", "low=0", "high=0"]))
        uploadTwo()
        let m = fixture.mountpoint
        XCTAssertEqual(writeBytes(m + "/other/new", tiled(6 * MiB, seed: 3)), ENOSPC)
        XCTAssertEqual(getAttr(m + "/Documents/old", pf("download_status")), .value("current"))
        XCTAssertTrue(readPurgeLog(fixture.container).filter { $0.action == "evict" }.isEmpty)
    }
}

/// The suites again against `rclone serve s3` and `rclone serve webdav` on 127.0.0.1.
/// Each adds what only rclone's remotes have (`CloudNetworkTests.swift`).
final class CloudUploadEvictS3Tests: CloudUploadEvictTests {
    override class var remoteKind: CloudRemoteKind { .s3 }
    func testARemoteThatGoesAwayAndRcloneEndingWithTheDaemon() throws { try checkRemoteGoingAwayAndRcloneEndingWithTheDaemon() }
}

final class CloudUploadEvictWebDAVTests: CloudUploadEvictTests {
    override class var remoteKind: CloudRemoteKind { .webdav }
    func testARemoteThatGoesAwayAndRcloneEndingWithTheDaemon() throws { try checkRemoteGoingAwayAndRcloneEndingWithTheDaemon() }
}

final class CloudOptimizeStorageS3Tests: CloudOptimizeStorageTests {
    override class var remoteKind: CloudRemoteKind { .s3 }
    func testAnUnknownRemoteIsRefusedAtMount() throws { try checkAnUnknownRemoteIsRefusedAtMount() }
}

final class CloudOptimizeStorageWebDAVTests: CloudOptimizeStorageTests {
    override class var remoteKind: CloudRemoteKind { .webdav }
    func testAnUnknownRemoteIsRefusedAtMount() throws { try checkAnUnknownRemoteIsRefusedAtMount() }
}

/// Unmounts the purgefs mounts at `paths`, in order; returns the ones that would not go.
func unmountPurgefsMounts(at paths: [String]) -> [String] {
    paths.filter { path in
        MountTable.isMounted(path) && (try? Subprocess.run(["fusermount3", "-u", path], timeout: 15))?.status != 0
    }
}
