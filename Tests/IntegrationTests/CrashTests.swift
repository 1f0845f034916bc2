import Foundation
import Glibc
import PurgeCore
import XCTest

/// `purgefs crash` on an ext4 and an XFS loop image: what was not synced is
/// gone, what was synced stays, open files answer EIO, the accounting equals
/// a walk, the kernel shows the restored data and names.
final class CrashExt4Tests: Ext4ImageTestCase {
    override func mountPurgefs(options: [String] = []) throws { try super.mountPurgefs(options: options + ["crashable"]) }
    override func prepareContainer() throws { try prepareCrashContainer() }
    func testDataSinceTheLastSyncIsLostAndSyncedDataStays() throws { try dataSinceTheLastSyncIsLost() }
    func testNamesSinceTheDirectorySyncAreUndone() throws { try namesSinceTheDirectorySyncAreUndone() }
    func testOpenFilesAnswerEIOAfterACrash() throws { try openFilesAnswerEIO() }
    func testDryRunListsAndChangesNothing() throws { try dryRunListsAndChangesNothing() }
    func testSQLiteWithSynchronousFullKeepsEveryCommit() throws { try sqliteKeepsEveryCommit() }
    func testACarelessWriterLosesItsFile() throws { try carelessWriterLosesItsFile() }

    /// Each crash ends every file opened before it, those opened since the
    /// crash before it too; a file opened after it works.
    func testAFileOpenedBetweenTwoCrashesAnswersEIOAfterTheSecond() throws {
        crash()
        let between = openThroughMount("fsync", O_RDWR)
        var buffer = [UInt8](repeating: 0, count: 16)
        XCTAssertEqual(pread(between, &buffer, 16, 0), 16, "opened after the first crash: works")
        write(between, "unsynced", at: 0)
        crash()
        XCTAssertEqual(pwrite(between, "x", 1, 0), -1)
        XCTAssertEqual(errno, EIO, "a write through a descriptor opened between the two crashes")
        XCTAssertEqual(fsync(between), -1)
        XCTAssertEqual(errno, EIO, "an fsync through it")
        close(between)
        let after = openThroughMount("fsync", O_RDWR)
        XCTAssertEqual(pread(after, &buffer, 16, 0), 16, "a descriptor opened after the second crash works")
        close(after)
        assertBytes("fsync", Self.synced, "the write between the crashes is gone")
    }

    /// Without `crashable` nothing is tracked: `purgefs crash` says so in one line and changes nothing.
    func testAMountWithoutCrashableRefusesToCrash() throws {
        XCTAssertEqual(unmountPurgefs(), [])
        let result = try Subprocess.run([fixture.binary, "mount", container, m], timeout: 30)
        XCTAssertEqual(result.status, 0, "\(result)")
        let fd = openThroughMount("fsync", O_RDWR)
        write(fd, "unsynced", at: 0)
        close(fd)
        for arguments in [["crash", m], ["crash", m, "--dry-run"]] {
            let refused = try Subprocess.run([fixture.binary] + arguments, timeout: 30)
            XCTAssertEqual(refused.status, 1)
            XCTAssertEqual(refused.stderr, "purgefs: \(m) was not mounted with -o crashable: nothing unsynced is tracked, so it cannot crash\n")
        }
        XCTAssertEqual(bytes("fsync").map { Array($0.prefix(8)) }, Array("unsynced".utf8))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: container + "/.purgefs/crash"), [],
                       "nothing saved without crashable (the directory is the earlier crashable mount's)")
    }
}

final class CrashXFSTests: ReflinkTestCase {
    override func mountPurgefs(options: [String] = []) throws { try super.mountPurgefs(options: options + ["crashable"]) }
    override func prepareContainer() throws { try prepareCrashContainer() }
    func testDataSinceTheLastSyncIsLostAndSyncedDataStays() throws { try dataSinceTheLastSyncIsLost() }
    func testNamesSinceTheDirectorySyncAreUndone() throws { try namesSinceTheDirectorySyncAreUndone() }
    func testOpenFilesAnswerEIOAfterACrash() throws { try openFilesAnswerEIO() }
    func testDryRunListsAndChangesNothing() throws { try dryRunListsAndChangesNothing() }
    func testSQLiteWithSynchronousFullKeepsEveryCommit() throws { try sqliteKeepsEveryCommit() }
    func testACarelessWriterLosesItsFile() throws { try carelessWriterLosesItsFile() }
}

extension LoopImageTestCase {
    static let synced = Array("the synced version of this file\n".utf8)

    /// Files that exist before the mount: their names and data are durable.
    func prepareCrashContainer() throws {
        for name in ["d", "s"] { XCTAssertEqual(mkdir(container + "/" + name, 0o755), 0) }
        for name in ["fsync", "fdatasync", "osync", "shrunk", "grown", "untouched", "d/old", "d/x", "s/old", "s/x"] {
            try Data(Self.synced).write(to: URL(fileURLWithPath: container + "/" + name))
        }
    }

    /// `purgefs crash` (or `--dry-run`); its output.
    @discardableResult
    func crash(dryRun: Bool = false, file: StaticString = #filePath, line: UInt = #line) -> String {
        let result = try? Subprocess.run([fixture.binary, "crash", m] + (dryRun ? ["--dry-run"] : []), timeout: 60)
        XCTAssertEqual(result?.status, 0, "purgefs crash: \(String(describing: result))", file: file, line: line)
        return result?.stdout ?? ""
    }

    func openThroughMount(_ name: String, _ flags: Int32, file: StaticString = #filePath, line: UInt = #line) -> Int32 {
        let fd = open(m + "/" + name, flags | O_CLOEXEC, 0o644)
        XCTAssertGreaterThanOrEqual(fd, 0, "open \(name): \(Errno.name(errno))", file: file, line: line)
        return fd
    }

    func write(_ fd: Int32, _ text: String, at offset: Int64, file: StaticString = #filePath, line: UInt = #line) {
        let bytes = Array(text.utf8)
        XCTAssertEqual(bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, bytes.count, off_t(offset)) }, bytes.count,
                       "pwrite: \(Errno.name(errno))", file: file, line: line)
    }

    func bytes(_ name: String, in root: String? = nil) -> [UInt8]? {
        (try? Data(contentsOf: URL(fileURLWithPath: (root ?? m) + "/" + name))).map(Array.init)
    }

    /// Through the mount. Not `exists`: that name would hide the global
    /// `exists(path)` in every loop-image test.
    func existsInMount(_ name: String) -> Bool { access(m + "/" + name, F_OK) == 0 }

    /// Whether `name` exists through the mount, once the kernel's cache of
    /// names agrees with the daemon (polled against a deadline).
    func settledExists(_ name: String, _ expected: Bool) -> Bool {
        _ = eventually(timeout: 10) { existsInMount(name) == expected }
        return existsInMount(name)
    }

    /// Through the mount and in the backing directory alike. The kernel
    /// hears of what a crash restored through the notifier's queue, so the
    /// mount is polled (against a deadline) until it shows it.
    func assertBytes(_ name: String, _ expected: [UInt8]?, _ label: String, file: StaticString = #filePath, line: UInt = #line) {
        _ = eventually(timeout: 10) { bytes(name) == expected }
        XCTAssertEqual(bytes(name).map { String(decoding: $0, as: UTF8.self) }, expected.map { String(decoding: $0, as: UTF8.self) },
                       "\(label): \(name) through the mount", file: file, line: line)
        XCTAssertEqual(bytes(name, in: container).map { String(decoding: $0, as: UTF8.self) }, expected.map { String(decoding: $0, as: UTF8.self) },
                       "\(label): \(name) in the backing directory", file: file, line: line)
    }

    /// The container's regular files and their total size by a walk of the
    /// backing directory, against the root's `files` and `size`.
    func assertCountsEqualAWalk(_ label: String, file: StaticString = #filePath, line: UInt = #line) {
        var files: UInt64 = 0
        var size: UInt64 = 0
        let enumerator = FileManager.default.enumerator(atPath: container)!
        while let name = enumerator.nextObject() as? String {
            if name == ".purgefs" { enumerator.skipDescendants(); continue }
            var status = stat()
            guard lstat(container + "/" + name, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { continue }
            files += 1
            size += UInt64(status.st_size)
        }
        XCTAssertEqual(numberAttr(m, "files"), files, "\(label): files vs a walk", file: file, line: line)
        XCTAssertEqual(numberAttr(m, "size"), size, "\(label): size vs a walk", file: file, line: line)
        assertAccounting(label, file: file, line: line)
    }

    func dataSinceTheLastSyncIsLost() throws {
        // Written, then synced three ways, then written again without a sync.
        let kinds: [(String, (Int32) -> Int32)] = [("fsync", fsync), ("fdatasync", fdatasync)]
        for (name, sync) in kinds {
            let fd = openThroughMount(name, O_RDWR)
            write(fd, "SYNCED", at: 4)
            XCTAssertEqual(sync(fd), 0)
            write(fd, "lost", at: 0)
            write(fd, " and a lost tail", at: Int64(Self.synced.count))
            close(fd)
        }
        let osync = openThroughMount("osync", O_RDWR | O_SYNC)
        write(osync, "O_SYNC", at: 4)
        write(osync, " kept tail", at: Int64(Self.synced.count))
        close(osync)
        XCTAssertEqual(truncate(m + "/shrunk", 5), 0)
        XCTAssertEqual(truncate(m + "/grown", 1 << 20), 0)
        let fresh = openThroughMount("d/written-never-synced", O_RDWR | O_CREAT)
        write(fresh, "never synced", at: 0)
        close(fresh)
        let dir = open(m + "/d", O_RDONLY | O_DIRECTORY)
        XCTAssertEqual(fsync(dir), 0, "the new name is durable, its data is not")
        close(dir)
        // Read through the mount before the crash: the kernel caches it.
        XCTAssertEqual(bytes("shrunk")?.count, 5)

        let report = crash()
        XCTAssertTrue(report.contains("data fsync"), report)
        var syncedHere = Self.synced
        syncedHere.replaceSubrange(4..<10, with: Array("SYNCED".utf8))
        assertBytes("fsync", syncedHere, "written after its fsync")
        assertBytes("fdatasync", syncedHere, "written after its fdatasync")
        var osyncBytes = Self.synced
        osyncBytes.replaceSubrange(4..<10, with: Array("O_SYNC".utf8))
        assertBytes("osync", osyncBytes + Array(" kept tail".utf8), "O_SYNC writes are durable")
        assertBytes("shrunk", Self.synced, "truncated after the sync: its size and bytes back")
        assertBytes("grown", Self.synced, "extended after the sync: its size back")
        assertBytes("untouched", Self.synced, "not written")
        assertBytes("d/written-never-synced", [], "a durable name whose data was never synced")
        var status = stat()
        XCTAssertTrue(eventually(timeout: 10) { stat(m + "/grown", &status) == 0 && Int(status.st_size) == Self.synced.count })
        XCTAssertEqual(Int(status.st_size), Self.synced.count, "the kernel's attributes show the synced size")
        assertCountsEqualAWalk("after the crash")

        // The mount carries on: a write and a sync after the crash stay over a second one.
        let after = openThroughMount("fsync", O_RDWR)
        write(after, "AFTER!", at: 4)
        XCTAssertEqual(fsync(after), 0)
        close(after)
        crash()
        syncedHere.replaceSubrange(4..<10, with: Array("AFTER!".utf8))
        assertBytes("fsync", syncedHere, "synced after the first crash")
        let left = (try? FileManager.default.contentsOfDirectory(atPath: container + "/.purgefs/crash")) ?? ["?"]
        XCTAssertEqual(left, [], "nothing kept once everything is synced or crashed")
    }

    func namesSinceTheDirectorySyncAreUndone() throws {
        // `s` first, then its sync: a directory's sync commits every name
        // change made before it (the journal commits in order), so `d`'s
        // changes come after it.
        for directory in ["s", "d"] {
            let made = openThroughMount(directory + "/new", O_WRONLY | O_CREAT)
            write(made, "new", at: 0)
            XCTAssertEqual(fsync(made), 0, "synced, but its name never is in d")
            close(made)
            XCTAssertEqual(unlink(m + "/\(directory)/old"), 0)
            XCTAssertEqual(rename(m + "/\(directory)/x", m + "/\(directory)/y"), 0)
            XCTAssertEqual(mkdir(m + "/\(directory)/sub", 0o755), 0)
            if directory == "s" {
                let s = open(m + "/s", O_RDONLY | O_DIRECTORY)
                XCTAssertEqual(fsync(s), 0)
                close(s)
            }
        }
        // Looked up before the crash: the kernel has these names cached.
        XCTAssertTrue(existsInMount("d/new") && existsInMount("d/y") && !existsInMount("d/old"))

        crash()
        XCTAssertFalse(settledExists("d/new", false), "a file synced but never linked durably vanishes")
        XCTAssertFalse(settledExists("d/sub", false), "a directory made since the sync is gone")
        assertBytes("d/old", Self.synced, "an unlink since the sync is undone, data and all")
        assertBytes("d/x", Self.synced, "a rename since the sync is undone")
        XCTAssertFalse(settledExists("d/y", false))
        assertBytes("s/new", Array("new".utf8), "names synced with their directory stay")
        XCTAssertFalse(settledExists("s/old", false))
        XCTAssertFalse(settledExists("s/x", false))
        assertBytes("s/y", Self.synced, "a rename synced with its directory stays")
        XCTAssertTrue(settledExists("s/sub", true))
        assertCountsEqualAWalk("after undoing names")
    }

    func openFilesAnswerEIO() throws {
        let writer = openThroughMount("fsync", O_RDWR)
        let reader = openThroughMount("untouched", O_RDONLY)
        var buffer = [UInt8](repeating: 0, count: 16)
        XCTAssertEqual(pread(reader, &buffer, 16, 0), 16, "read before the crash: in the kernel's cache")
        write(writer, "unsynced", at: 0)
        crash()
        // Its cached pages go through the notifier's queue: polled against a deadline.
        XCTAssertTrue(eventually(timeout: 10) { pread(reader, &buffer, 16, 0) == -1 && errno == EIO },
                      "a read through a descriptor opened before the crash, of a file it did not touch")
        XCTAssertEqual(pwrite(writer, "x", 1, 0), -1)
        XCTAssertEqual(errno, EIO, "a write through a descriptor opened before the crash")
        XCTAssertEqual(fsync(writer), -1)
        XCTAssertEqual(errno, EIO, "an fsync through it")
        XCTAssertEqual(pread(writer, &buffer, 16, 0), -1)
        XCTAssertEqual(errno, EIO, "a read of restored data through it")
        XCTAssertEqual(lseek(reader, 0, 3 /* SEEK_DATA */), -1)
        XCTAssertEqual(errno, EIO, "a seek through a read-only descriptor")
        close(writer)
        close(reader)
        let again = openThroughMount("fsync", O_RDWR)
        XCTAssertEqual(pread(again, &buffer, 16, 0), 16, "a descriptor opened after the crash works")
        close(again)
        assertBytes("fsync", Self.synced, "the unsynced write is gone")
    }

    func dryRunListsAndChangesNothing() throws {
        let fd = openThroughMount("fsync", O_RDWR)
        write(fd, "unsynced", at: 0)
        close(fd)
        XCTAssertEqual(rename(m + "/d/x", m + "/d/moved"), 0)
        let before = bytes("fsync")
        let listed = crash(dryRun: true)
        XCTAssertTrue(listed.contains("data fsync: written since the last sync, back to \(Self.synced.count) bytes"), listed)
        XCTAssertTrue(listed.contains("name d/moved: renamed from d/x since the last sync, back"), listed)
        XCTAssertEqual(bytes("fsync"), before, "a dry run changes no data")
        XCTAssertTrue(existsInMount("d/moved"), "a dry run changes no name")
        XCTAssertEqual(crash(dryRun: true), listed, "and forgets nothing")
        let crashed = crash()
        XCTAssertTrue(crashed.contains("name d/moved: renamed from d/x since the last sync, back"), crashed)
        XCTAssertEqual(crash(dryRun: true), "Nothing would be lost: everything is synced.\n")
        let log = (try? String(contentsOfFile: container + "/.purgefs/daemon.log", encoding: .utf8)) ?? ""
        XCTAssertTrue(log.contains("crash: 1 name changes undone, 1 files back to their last sync"), log)
    }

    /// The `sqlite3` shell on `database` (relative to the mount); its output.
    func sqlite(_ database: String, _ sql: String, file: StaticString = #filePath, line: UInt = #line) -> String {
        let result = try? Subprocess.run(["sqlite3", "-batch", m + "/" + database, sql], timeout: 60)
        XCTAssertEqual(result?.status, 0, "sqlite3 \(sql): \(String(describing: result))", file: file, line: line)
        return result?.stdout ?? ""
    }

    /// A real app: SQLite in WAL mode with `synchronous=FULL` syncs each
    /// commit (and the directory of a new WAL), so every transaction a
    /// finished `sqlite3` committed survives the crash, and the database is
    /// intact. The last one's connection stays open across the crash, in the
    /// middle of a transaction whose pages spilled into the WAL.
    func sqliteKeepsEveryCommit() throws {
        _ = sqlite("d/app.db", "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; CREATE TABLE t(i INTEGER PRIMARY KEY, v BLOB);")
        for _ in 0..<20 {
            _ = sqlite("d/app.db", "PRAGMA synchronous=FULL; INSERT INTO t(v) VALUES (randomblob(3000));")
        }
        // One writer still running at the crash: committed rows, then an open transaction.
        let script = """
            import sqlite3, sys, time
            db = sqlite3.connect(sys.argv[1], isolation_level=None)
            db.execute("PRAGMA synchronous=FULL")
            db.execute("PRAGMA cache_size=2")
            db.execute("INSERT INTO t(v) VALUES (randomblob(3000))")
            db.execute("BEGIN")
            db.execute("INSERT INTO t(v) VALUES (randomblob(1000000))")
            print("ready", flush=True)
            time.sleep(600)
            """
        let holder = try Subprocess.spawn(["python3", "-c", script, m + "/d/app.db"],
                                          stdoutPath: fixture.base + "/holder.out", stderrPath: fixture.base + "/holder.err")
        defer {
            holder.terminate()
            holder.waitUntilExit()
        }
        XCTAssertTrue(eventually(timeout: 30) { ((try? String(contentsOfFile: fixture.base + "/holder.out", encoding: .utf8)) ?? "").contains("ready") },
                      "the open transaction is under way: \((try? String(contentsOfFile: fixture.base + "/holder.err", encoding: .utf8)) ?? "")")
        let report = crash()
        XCTAssertTrue(report.contains("data d/app.db-wal: written since the last sync"),
                      "the open transaction's pages, spilled into the WAL unsynced, are undone: \(report)")
        // The app does not outlive a power loss: its locks go with it, and it is started again.
        holder.terminate()
        holder.waitUntilExit()
        XCTAssertEqual(sqlite("d/app.db", "PRAGMA integrity_check; SELECT count(*) FROM t;"), "ok\n21\n",
                       "every committed transaction, none of the open one")
        assertCountsEqualAWalk("after crashing SQLite")
    }

    /// The classic bug: write a temporary file, rename it over the original
    /// without syncing the data first. When the rename is committed (here
    /// by the directory's sync, on a real machine by the journal's next
    /// commit) and the data is not, a crash leaves an empty file: the old
    /// content and the new are both gone. The careful writer (fsync before
    /// the rename) keeps the new content.
    func carelessWriterLosesItsFile() throws {
        for (name, careful) in [("fsync", false), ("fdatasync", true)] {
            let temporary = openThroughMount(name + ".tmp", O_WRONLY | O_CREAT | O_TRUNC)
            write(temporary, "the new version", at: 0)
            if careful { XCTAssertEqual(fsync(temporary), 0) }
            close(temporary)
            XCTAssertEqual(rename(m + "/" + name + ".tmp", m + "/" + name), 0)
        }
        let root = open(m, O_RDONLY | O_DIRECTORY)
        XCTAssertEqual(fsync(root), 0)
        close(root)
        XCTAssertEqual(bytes("fsync").map { String(decoding: $0, as: UTF8.self) }, "the new version", "before the crash, all looks fine")
        crash()
        assertBytes("fsync", [], "the careless writer's file is empty after the crash: data lost")
        assertBytes("fdatasync", Array("the new version".utf8), "the careful writer's file has its new version")
        assertCountsEqualAWalk("after the careless writer's crash")
    }
}
