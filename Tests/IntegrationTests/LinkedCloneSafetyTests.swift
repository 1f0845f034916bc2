internal import CLinux
import Foundation
import Glibc
import Synchronization
import XCTest

/// Linked clones (ext4, no reflinks) where they can go wrong: `kill -9` in
/// the middle of a break, readers racing a break, `cp -p`, chown, hard
/// links, renames between a clone and its original, clones of clones, and a
/// writer already open when the copy is made. Every check reads the bytes
/// through the mount and in the backing directory (SPEC, Safety: "clones
/// still read their own content").
final class LinkedCloneSafetyTests: Ext4ImageTestCase {
    /// Room for a 256 MiB file and two whole copies of it.
    override var imageSize: Int { 1 << 30 }
    /// What the `kill -9` tests break: big enough that its copy takes a while.
    static let big = 256 << 20
    /// The file (`data`) the other tests clone.
    static let size = 32 << 20
    /// What a test writes into a file: one block, unlike any random data.
    static let block = [UInt8](repeating: 0xC3, count: 4096)

    /// The state directory's anchors: `a<ino>` for a clone, `z<ino>` for
    /// the copy a breaking original moves its clones to.
    var anchors: String { container + "/.purgefs/clone-anchors" }

    override func prepareContainer() throws {
        try writeRandom(container + "/data", count: Self.size, seed: 3)
        XCTAssertEqual(chmod(container + "/data", 0o644), 0)
    }

    // MARK: kill -9 in the middle of a break

    /// The clone's first write copies the whole file into its anchor; the
    /// daemon is killed once the anchor has grown (the copy is under way).
    /// If the write is done before the poll sees the anchor grow, the kill
    /// lands after the break: what must hold in every state is checked, and
    /// the test goes again with a fresh clone until a kill lands while the
    /// write is under way (`untilKilledMidOperation`).
    func testKill9WhileACloneBreaks() throws {
        // A whole copy to kill in (BlockSharingTests kills a sharing daemon after synced writes).
        try remountCopyingWholeFiles()
        try addBigFile()
        try untilKilledMidOperation("the clone's data was copied", reset: { try removeNames(["clone"]) }) {
            try killWhileACloneBreaks()
        }
    }

    /// One try of `testKill9WhileACloneBreaks`: whether the kill landed
    /// before the clone's write returned.
    func killWhileACloneBreaks() throws -> Bool {
        let original = try contents("big")
        run(["cp", m + "/big", m + "/clone"])
        XCTAssertEqual(contentID("big"), contentID("clone"))
        let cloneIno = try status(m + "/clone").st_ino
        let anchor = anchors + "/a\(cloneIno)"
        XCTAssertEqual(fileSize(anchor), 0, "the clone's anchor is empty while it shares")

        let offset = Self.big / 2 + 123
        let byte = ~original[offset]
        let written = patched(original, at: offset, [byte])
        let writer = try startWriting(byte, at: offset, of: m + "/clone")
        let caught = eventually(timeout: 60) { (fileSize(anchor) ?? 0) > 0 || !writer.isRunning }
        XCTAssertTrue(caught, "neither did the anchor grow nor did the write finish")
        let midCopy = killPurgefs(midOperationOf: writer)
        print("LinkedCloneSafetyTests: killed \(midCopy ? "while the clone's data was copied" : "after the write had finished")")
        try mountPurgefs()

        assertReads("big", original, "the original after kill -9 during the clone's break")
        let clone = try contents("clone")
        XCTAssertTrue(clone == original || clone == written,
                      "the clone reads neither the original bytes nor them with its one byte written (first difference at \(firstDifference(clone, original)))")
        assertReads("clone", clone, "the clone after kill -9 during its break")
        XCTAssertEqual(try status(m + "/clone").st_ino, cloneIno, "the clone keeps its identity")
        if try backingInode("clone") == backingInode("big") {
            XCTAssertEqual(clone, original, "a clone still sharing its data reads the original")
            XCTAssertEqual(contentID("clone"), contentID("big"), "still a clone")
            XCTAssertEqual(numberAttr(m + "/clone", "shared"), UInt64(Self.big))
        } else {
            XCTAssertNotEqual(contentID("clone"), contentID("big"), "a clone with data of its own")
            XCTAssertEqual(numberAttr(m + "/clone", "shared"), sparseShared("clone"))
        }
        assertOnlyNames(["big", "clone", "data"])
        assertAccounting("after kill -9 during the clone's break")

        overwrite(m + "/clone", at: 4096, Self.block)
        assertReads("clone", patched(clone, at: 4096, Self.block), "a write into the clone after the remount")
        assertReads("big", original, "the original after a write into the clone after the remount")
        XCTAssertNotEqual(contentID("clone"), contentID("big"))
        XCTAssertEqual(numberAttr(m, "size"), UInt64(2 * Self.big + Self.size))
        XCTAssertEqual(numberAttr(m, "files"), 3)
        XCTAssertEqual(numberAttr(m, "clone_savings"), sparseSavings())
        assertAccounting("after a write into the clone after the remount")
        return midCopy
    }

    /// The original's first write copies its data to `z<ino>` and moves
    /// its clones' names over to that copy; the daemon is killed once the
    /// copy exists (while the data is copied). As above, a try whose write
    /// finished first is checked and followed by another.
    func testKill9WhileTheOriginalBreaks() throws {
        try killWhileTheOriginalBreaks(once: "the copy exists") { copy in exists(copy) }
    }

    /// The same, killed once the copy is whole: while it is synced, while
    /// the clones' names move over to it (the next mount finishes the
    /// move), or just after.
    func testKill9WhileTheOriginalMovesItsClones() throws {
        try killWhileTheOriginalBreaks(once: "the copy is whole") { copy in fileSize(copy) == Int64(Self.big) }
    }

    /// Breaks `big`, the original of two clones, and kills the daemon once
    /// `condition` holds of the path of the copy it is making; again, with a
    /// fresh `big` and clones, until a kill lands while the write is under way.
    func killWhileTheOriginalBreaks(once stage: String, _ condition: (String) -> Bool, file: StaticString = #filePath, line: UInt = #line) throws {
        try untilKilledMidOperation("once \(stage)", reset: { try removeNames(["big", "c1", "c2"]) }, file: file, line: line) {
            try addBigFile()
            return try killOnceWhileTheOriginalBreaks(once: stage, condition, file: file, line: line)
        }
    }

    /// One try of `killWhileTheOriginalBreaks`: whether the kill landed
    /// before the original's write returned.
    func killOnceWhileTheOriginalBreaks(once stage: String, _ condition: (String) -> Bool, file: StaticString, line: UInt) throws -> Bool {
        let original = try contents("big")
        run(["cp", m + "/big", m + "/c1"])
        run(["cp", m + "/big", m + "/c2"])
        XCTAssertEqual(numberAttr(m, "clone_savings"), UInt64(2 * Self.big) + sparseSavings())
        let inodes = try ["big", "c1", "c2"].map { try status(m + "/" + $0).st_ino }
        let copy = anchors + "/z\(inodes[0])"
        let oldData = try backingInode("big")

        let offset = 7 * 4096 + 5
        let byte = ~original[offset]
        let written = patched(original, at: offset, [byte])
        let writer = try startWriting(byte, at: offset, of: m + "/big")
        let caught = eventually(timeout: 60) { condition(copy) || !writer.isRunning }
        XCTAssertTrue(caught, "neither did \(stage) nor did the write finish", file: file, line: line)
        let midBreak = killPurgefs(midOperationOf: writer)
        print("LinkedCloneSafetyTests: killed \(midBreak ? "once \(stage)" : "after the write had finished")")
        try mountPurgefs()

        print("LinkedCloneSafetyTests: after the remount the clones read \(try backingInode("c1") == oldData ? "the old data" : "the copy")")
        let now = try contents("big")
        XCTAssertTrue(now == original || now == written,
                      "the original reads neither its old bytes nor them with its one byte written (first difference at \(firstDifference(now, original)))")
        assertReads("big", now, "the original after kill -9 during its break")
        assertReads("c1", original, "a clone after kill -9 during the original's break")
        assertReads("c2", original, "a clone after kill -9 during the original's break")
        XCTAssertEqual(try ["big", "c1", "c2"].map { try status(m + "/" + $0).st_ino }, inodes, "every file keeps its identity")
        XCTAssertEqual(try backingInode("c1"), try backingInode("c2"), "the clones share one data, old or copied")
        XCTAssertEqual(contentID("c1"), contentID("c2"))
        if try backingInode("big") == backingInode("c1") {
            XCTAssertEqual(now, original)
            XCTAssertEqual(contentID("big"), contentID("c1"), "the original still shares its data")
        } else {
            XCTAssertNotEqual(contentID("big"), contentID("c1"), "the original has data of its own")
        }
        XCTAssertFalse(exists(copy), "the copy is linked at the clones' names or removed, not left in the state directory")
        assertOnlyNames(["big", "c1", "c2", "data"])
        assertAccounting("after kill -9 during the original's break")

        var expected = ["big": now, "c1": original, "c2": original]
        for (index, name) in ["big", "c1", "c2"].enumerated() {
            let at = (index + 1) * (Self.big / 4)
            let bytes = [UInt8](repeating: UInt8(0x10 + index), count: 4096)
            overwrite(m + "/" + name, at: Int64(at), bytes)
            expected[name] = patched(expected[name]!, at: at, bytes)
            for (other, content) in expected.sorted(by: { $0.key < $1.key }) {
                assertReads(other, content, "after a write into \(name) after the remount")
            }
        }
        XCTAssertEqual(Set(["big", "c1", "c2"].map { contentID($0).description }).count, 3, "three contents of their own")
        XCTAssertEqual(numberAttr(m, "size"), UInt64(3 * Self.big + Self.size))
        XCTAssertEqual(numberAttr(m, "files"), 4)
        XCTAssertEqual(numberAttr(m, "clone_savings"), sparseSavings())
        assertAccounting("after writing every file after the remount")
        return midBreak
    }

    // MARK: Readers racing a break

    func testReadersOfTheOriginalNeverSeeTheClonesWrites() throws {
        try assertReadersUnmoved(reading: "data", whileWriting: "clone")
    }

    func testReadersOfACloneNeverSeeTheOriginalsWrites() throws {
        try assertReadersUnmoved(reading: "clone", whileWriting: "data")
    }

    /// A clone's read that loaded its original's file, held at the daemon's
    /// pause point between that and the read itself, while the original is
    /// written: the write waits for it (the original's break moves the clone
    /// to a copy first), and the read returns the bytes the clone had, never
    /// the original's new ones.
    func testACloneReadDelayedAcrossItsOriginalsFirstWriteReadsItsOwnBytes() throws {
        #if !DEBUG
        throw XCTSkip("pause points are in debug builds only")
        #else
        // Remounted: the kernel's cache of the clone is empty, so its read reaches the daemon.
        let (original, pause) = try cloneDataThenRemount(pausingAt: "shared-read")
        defer { daemonEnvironment = [:] }

        let read = Mutex<[UInt8]?>(nil)
        let clonePath = m + "/clone"
        let reader = Thread {
            let fd = open(clonePath, O_RDONLY)
            guard fd >= 0 else { return }
            var bytes = [UInt8](repeating: 0, count: 4096)
            let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
            close(fd)
            read.withLock { $0 = count == 4096 ? bytes : [] }
        }
        reader.start()
        XCTAssertTrue(eventually(timeout: 30) { access(pause, F_OK) == 0 }, "the clone's read never reached its pause")
        let wrote = Mutex<Int>(-2)
        let dataPath = m + "/data"
        let writer = Thread {
            let fd = open(dataPath, O_WRONLY)
            let count = fd < 0 ? -1 : Self.block.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
            if fd >= 0 { close(fd) }
            wrote.withLock { $0 = count }
        }
        writer.start()
        // Unordered, the write ends within this while the read is held.
        _ = eventually(timeout: 3) { wrote.withLock { $0 } != -2 }
        XCTAssertEqual(wrote.withLock { $0 }, -2, "the original's write ended while a read of its clone was held between loading the shared file and reading it")
        XCTAssertEqual(unlink(pause), 0)
        XCTAssertTrue(eventually(timeout: 30) { read.withLock { $0 } != nil && wrote.withLock { $0 } != -2 }, "the read or the write never came back")
        let got = read.withLock { $0 } ?? []
        XCTAssertTrue(got == Array(original.prefix(4096)),
                      "the clone's held read returned other bytes than its own (\(got.prefix(8)), \(got.filter { $0 == Self.block[0] }.count) of the original's written byte)")
        XCTAssertEqual(wrote.withLock { $0 }, Self.block.count, "the original's write")
        assertReads("clone", original, "the clone after its original's write")
        assertReads("data", patched(original, at: 0, Self.block), "the original after its write")
        #endif
    }

    /// A copy of a clone held at the daemon's pause point after the copy
    /// policy found its source no sparse member, while the source's first
    /// write makes it one: the copy is made as a sparse member's is, and
    /// reads what the source holds. (Linked from there, the clone's making
    /// held the source's data lock and waited for the source's writes to
    /// end, which wait for that lock inside their bracket: every request on
    /// those files hung, found by `HangTests`' load over the ring.)
    func testACopyWhoseSourceTurnedSparseMeanwhileIsCopiedNotLinked() throws {
        #if !DEBUG
        throw XCTSkip("pause points are in debug builds only")
        #else
        guard sharesBlocks else { throw XCTSkip("block sharing is off for this run (PURGEFS_BLOCK_SHARING=0)") }
        let (original, pause) = try cloneDataThenRemount(pausingAt: "clone-checked")
        defer { daemonEnvironment = [:] }

        let copier = try Subprocess.spawn(["cp", m + "/clone", m + "/copy"],
                                          stdoutPath: fixture.base + "/cp.out", stderrPath: fixture.base + "/cp.err")
        defer { if copier.isRunning { kill(copier.processIdentifier, SIGKILL) } }
        XCTAssertTrue(eventually(timeout: 30) { access(pause, F_OK) == 0 }, "the copy never reached its pause")
        let writer = open(m + "/clone", O_WRONLY)
        XCTAssertGreaterThanOrEqual(writer, 0, "open clone: \(Errno.name(errno))")
        XCTAssertEqual(Self.block.withUnsafeBytes { pwrite(writer, $0.baseAddress, $0.count, 0) }, Self.block.count,
                       "the clone's first write: \(Errno.name(errno))")
        XCTAssertEqual(unlink(pause), 0)
        // The writer stays open: its next write must not wait for the copy.
        XCTAssertEqual(Self.block.withUnsafeBytes { pwrite(writer, $0.baseAddress, $0.count, 8192) }, Self.block.count,
                       "the clone's second write: \(Errno.name(errno))")
        close(writer)
        XCTAssertTrue(Subprocess.wait(copier, timeout: 60), "the copy never came back")
        XCTAssertEqual(copier.terminationStatus, 0, (try? String(contentsOfFile: fixture.base + "/cp.err", encoding: .utf8)) ?? "")
        let written = patched(patched(original, at: 0, Self.block), at: 8192, Self.block)
        assertReads("clone", written, "the clone after its writes")
        assertReads("data", original, "the original")
        let copy = try contents("copy")
        XCTAssertTrue(copy == written || copy == patched(original, at: 0, Self.block),
                      "the copy reads neither of the clone's states (\(copy.prefix(8).map { $0 }), zeros \(copy.prefix(65536).filter { $0 == 0 }.count))")
        XCTAssertNotEqual(contentID("copy"), contentID("clone"), "the copy of a sparse member was linked to it")
        #endif
    }

    /// Clones `data` as `clone` (`cp`), then remounts a daemon that holds
    /// the first thread reaching debug step `step` until the returned pause
    /// file is removed; returns `data`'s bytes and that file. The caller
    /// clears `daemonEnvironment` when done.
    private func cloneDataThenRemount(pausingAt step: String) throws -> (original: Data, pause: String) {
        run(["cp", m + "/data", m + "/clone"])
        XCTAssertEqual(contentID("clone"), contentID("data"), "cp made a clone")
        let original = try contents("data")
        XCTAssertEqual(unmountPurgefs(), [])
        let pause = fixture.base + "/paused"
        daemonEnvironment = ["PURGEFS_PAUSE_AT": step, "PURGEFS_PAUSE_FILE": pause]
        try mountPurgefs()
        return (original, pause)
    }

    /// A clone whose name was replaced behind the mount by a new file while
    /// a writer of the clone stayed open: the clone's first write gives it
    /// data of its own, and the new file under that name is left as it is
    /// (the clone's copy once replaced it, and the name read the clone's
    /// bytes). The clone, without a name now, keeps its bytes for its writer.
    func testACloneWhoseNameHoldsAnotherFileNowNeverReplacesIt() throws {
        run(["cp", m + "/data", m + "/clone"])
        XCTAssertEqual(contentID("clone"), contentID("data"), "cp made a clone")
        let original = try contents("data")
        let writer = open(m + "/clone", O_RDWR)
        XCTAssertGreaterThanOrEqual(writer, 0, "open clone: \(Errno.name(errno))")
        defer { if writer >= 0 { close(writer) } }

        let replacement = Data(repeating: 0x5A, count: 12_345)
        XCTAssertEqual(unlink(container + "/clone"), 0, "behind the mount: the clone's name removed")
        try replacement.write(to: URL(fileURLWithPath: container + "/clone"))

        XCTAssertEqual(Self.block.withUnsafeBytes { pwrite(writer, $0.baseAddress, $0.count, 0) }, Self.block.count,
                       "the clone's first write: \(Errno.name(errno))")
        var read = [UInt8](repeating: 0, count: Self.block.count)
        XCTAssertEqual(read.withUnsafeMutableBytes { pread(writer, $0.baseAddress, $0.count, 0) }, Self.block.count)
        XCTAssertEqual(read, Self.block, "the clone's writer reads what it wrote")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: container + "/clone")), replacement,
                       "the new file under the clone's old name is left as it was")
        XCTAssertTrue(eventually(timeout: 10) { (try? contents("clone")) == replacement },
                      "through the mount the name reads the new file, not the clone")
        assertReads("data", original, "the original")
    }

    /// Clones `data` as `clone`, then writes blocks into `writing` (which
    /// breaks it away) while readers of `reading` compare what they read
    /// with the bytes it had: they must never see the other file's writes.
    func assertReadersUnmoved(reading: String, whileWriting writing: String,
                              file: StaticString = #filePath, line: UInt = #line) throws {
        run(["cp", m + "/data", m + "/clone"])
        let original = try contents("data")
        let offsets = Self.hotOffsets
        let readers = startReaders(of: m + "/" + reading, expecting: original, at: offsets)
        var written = original
        let fd = open(m + "/" + writing, O_WRONLY)
        XCTAssertGreaterThanOrEqual(fd, 0, "open \(writing): \(Errno.name(errno))", file: file, line: line)
        for offset in offsets {
            XCTAssertEqual(Self.block.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) }, Self.block.count,
                           file: file, line: line)
            written = patched(written, at: offset, Self.block)
        }
        close(fd)
        readers.finish()
        XCTAssertEqual(readers.mismatches, [], "readers of \(reading) saw other bytes while \(writing) broke away", file: file, line: line)
        assertReads(reading, original, "after \(writing) broke away under readers", file: file, line: line)
        assertReads(writing, written, "after \(writing) broke away under readers", file: file, line: line)
        assertAccounting("after \(writing) broke away under readers", file: file, line: line)
    }

    // MARK: Metadata

    /// `cp -p` sets the mode with an access ACL and the times after the data:
    /// the clone gets them on its anchor and keeps sharing. (`-p` is
    /// mode, ownership and timestamps; coreutils copies xattrs only with
    /// `--preserve=xattr`, added here.)
    func testCpPreservingAttributesKeepsSharing() throws {
        let old: Int = 1_000_000_000
        XCTAssertEqual(chmod(m + "/data", 0o640), 0)
        setTimes(m + "/data", old)
        XCTAssertEqual(setAttr(m + "/data", "user.color", "blue"), 0)
        let original = try contents("data")
        run(["cp", "-p", "--preserve=xattr", m + "/data", m + "/copy"])

        for name in ["copy", "data"] {
            let st = try status(m + "/" + name)
            XCTAssertEqual(st.st_mode & 0o7777, 0o640, "\(name)'s mode")
            XCTAssertEqual(cachedMode(m + "/" + name), "640", "\(name)'s mode as the kernel has it")
            XCTAssertEqual(st.st_mtim.tv_sec, old, "\(name)'s mtime")
            XCTAssertEqual(st.st_mtim.tv_nsec, 0, "\(name)'s mtime")
            XCTAssertEqual(getAttr(m + "/" + name, "user.color"), .value("blue"), "\(name)'s xattr")
        }
        XCTAssertGreaterThan(numberAttr(m + "/copy", "shared") ?? 0, 0, "cp -p did not break the clone")
        XCTAssertEqual(contentID("copy"), contentID("data"))
        assertReads("copy", original, "after cp -p")
        assertReads("data", original, "after cp -p")

        // An access ACL set on a file whose mode the kernel has cached.
        XCTAssertEqual(writeBytes(m + "/plain", [1, 2, 3], mode: 0o644), 0)
        XCTAssertEqual(cachedMode(m + "/plain"), "644")
        XCTAssertEqual(setAccessACL(m + "/plain", 0o640), 0, "set system.posix_acl_access: \(Errno.name(errno))")
        XCTAssertEqual(cachedMode(m + "/plain"), "640", "the mount shows the ACL's mode at once")
        XCTAssertEqual(try status(m + "/plain").st_mode & 0o7777, 0o640, "the mount shows the ACL's mode at once")
        XCTAssertEqual(try status(container + "/plain").st_mode & 0o7777, 0o640, "the backing file's mode")

        // And on a clone: its own mode changes, not the original's.
        XCTAssertEqual(setAccessACL(m + "/copy", 0o600), 0, "set system.posix_acl_access: \(Errno.name(errno))")
        XCTAssertEqual(cachedMode(m + "/copy"), "600", "the mount shows the clone's ACL mode at once")
        XCTAssertEqual(cachedMode(m + "/data"), "640", "the original keeps its mode")
        XCTAssertEqual(try status(m + "/copy").st_mode & 0o7777, 0o600, "the mount shows the clone's ACL mode at once")
        XCTAssertEqual(try status(m + "/data").st_mode & 0o7777, 0o640, "the original keeps its mode")
        XCTAssertEqual(try status(container + "/data").st_mode & 0o7777, 0o640, "the backing original keeps its mode")
        XCTAssertEqual(contentID("copy"), contentID("data"), "an ACL does not break the clone")
    }

    func testChownOfACloneLeavesTheOriginalsOwner() throws {
        run(["cp", m + "/data", m + "/clone"])
        let owner = try status(container + "/data")
        XCTAssertEqual(chown(m + "/clone", 65534, 65534), 0, "chown the clone: \(Errno.name(errno))")
        for round in ["after chown", "after chown and a remount"] {
            let clone = try status(m + "/clone"), original = try status(m + "/data"), backing = try status(container + "/data")
            XCTAssertEqual([clone.st_uid, clone.st_gid], [65534, 65534], "\(round): the clone's owner")
            XCTAssertEqual([original.st_uid, original.st_gid], [owner.st_uid, owner.st_gid], "\(round): the original's owner")
            XCTAssertEqual([backing.st_uid, backing.st_gid], [owner.st_uid, owner.st_gid], "\(round): the backing original's owner")
            XCTAssertEqual(contentID("clone"), contentID("data"), "\(round): chown does not break the clone")
            XCTAssertEqual(numberAttr(m + "/clone", "shared"), UInt64(Self.size), round)
            if round == "after chown" {
                XCTAssertEqual(unmountPurgefs(), [])
                try mountPurgefs()
            }
        }
    }

    // MARK: Names

    func testHardLinkToAClone() throws {
        run(["cp", m + "/data", m + "/clone"])
        let original = try contents("data")
        let cloneIno = try status(m + "/clone").st_ino
        XCTAssertEqual(link(m + "/clone", m + "/clone2"), 0, "link: \(Errno.name(errno))")
        for name in ["clone", "clone2"] {
            let st = try status(m + "/" + name)
            XCTAssertEqual(st.st_ino, cloneIno, "\(name) is the clone")
            XCTAssertEqual(st.st_nlink, 2, "\(name)'s links")
            assertReads(name, original, "after ln")
        }
        XCTAssertEqual(try status(m + "/data").st_nlink, 1)
        XCTAssertEqual(try backingInode("clone"), try backingInode("clone2"))
        XCTAssertNotEqual(try backingInode("clone"), try backingInode("data"), "a linked clone has data of its own")
        assertReads("data", original, "after ln")

        overwrite(m + "/clone2", at: 8192, Self.block)
        let written = patched(original, at: 8192, Self.block)
        assertReads("clone2", written, "after a write through the link")
        assertReads("clone", written, "after a write through the link")
        assertReads("data", original, "after a write through the link")
        XCTAssertNotEqual(contentID("clone"), contentID("data"))
        // One file with two names, and the original: each stores its own data.
        XCTAssertEqual(numberAttr(m, "files"), 2)
        XCTAssertEqual(numberAttr(m, "size"), UInt64(2 * Self.size))
        XCTAssertEqual(numberAttr(m, "clone_savings"), sparseSavings())
        XCTAssertEqual(numberAttr(m + "/data", "shared"), sparseShared("data"))
    }

    func testRenamingACloneOverItsOriginal() throws {
        run(["cp", m + "/data", m + "/clone"])
        let original = try contents("data")
        let cloneIno = try status(m + "/clone").st_ino
        XCTAssertEqual(numberAttr(m, "files"), 2)
        run(["mv", m + "/clone", m + "/data"])
        assertRenamedOver(survivor: "data", identity: cloneIno, content: original)
    }

    func testRenamingTheOriginalOverItsClone() throws {
        run(["cp", m + "/data", m + "/clone"])
        let original = try contents("data")
        let dataIno = try status(m + "/data").st_ino
        XCTAssertEqual(numberAttr(m, "files"), 2)
        run(["mv", m + "/data", m + "/clone"])
        assertRenamedOver(survivor: "clone", identity: dataIno, content: original)
    }

    func testCloneOfAClone() throws {
        run(["cp", m + "/data", m + "/b"])
        run(["cp", m + "/b", m + "/c"])
        let original = try contents("data")
        let names = ["data", "b", "c"]
        XCTAssertEqual(Set(names.map { contentID($0).description }).count, 1, "all three share: \(names.map(contentID))")
        XCTAssertEqual(contentID("data").errorCode, 0)
        let stored = try UInt64(status(container + "/data").st_blocks) * 512
        XCTAssertEqual(numberAttr(m, "clone_savings"), 2 * stored)
        XCTAssertEqual(numberAttr(m + "/c", "shared"), stored)
        assertAccounting("after cp a b; cp b c")

        var expected = Dictionary(uniqueKeysWithValues: names.map { ($0, original) })
        for (index, name) in names.enumerated() {
            let at = index * 4096 * 3
            let bytes = [UInt8](repeating: UInt8(0x20 + index), count: 4096)
            overwrite(m + "/" + name, at: Int64(at), bytes)
            expected[name] = patched(expected[name]!, at: at, bytes)
            for other in names { assertReads(other, expected[other]!, "after writing \(name)") }
            assertAccounting("after writing \(name)")
        }
        XCTAssertEqual(Set(names.map { contentID($0).description }).count, 3, "three contents of their own")
        XCTAssertEqual(numberAttr(m, "clone_savings"), sparseSavings())
        XCTAssertEqual(numberAttr(m, "size"), UInt64(3 * Self.size))
        XCTAssertEqual(numberAttr(m, "files"), 3)
    }

    // MARK: A writer open before the copy

    func testAWriterOpenBeforeTheCopy() throws {
        let original = try contents("data")
        let fd = open(m + "/data", O_RDWR)
        XCTAssertGreaterThanOrEqual(fd, 0, "open O_RDWR: \(Errno.name(errno))")
        defer { if fd >= 0 { close(fd) } }
        run(["cp", m + "/data", m + "/copy"])
        assertReads("copy", original, "cp while a writer holds the original")

        var written = original
        for offset in [0, Self.size / 2, Self.size - 4096] {
            XCTAssertEqual(Self.block.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) }, Self.block.count,
                           "pwrite through the held descriptor: \(Errno.name(errno))")
            written = patched(written, at: offset, Self.block)
        }
        XCTAssertEqual(fsync(fd), 0)
        assertReads("copy", original, "after writes through the descriptor held across cp")
        assertReads("data", written, "after writes through the descriptor held across cp")
        XCTAssertEqual(close(fd), 0)
        assertReads("copy", original, "after closing the descriptor held across cp")
        XCTAssertNotEqual(contentID("copy"), contentID("data"))
        XCTAssertEqual(numberAttr(m + "/copy", "shared"), sparseShared("copy"))
        XCTAssertEqual(numberAttr(m, "clone_savings"), sparseSavings())
        assertAccounting("after writes through the descriptor held across cp")
    }

    // MARK: Helpers

    /// How many times a `kill -9` test goes before it fails for want of a
    /// kill that landed mid-operation.
    static let killAttempts = 4

    /// Runs `attempt` (which kills the daemon and says whether the kill
    /// landed while the write it aimed at was under way) until one does, at
    /// most `killAttempts` times, with `reset` between tries. A test whose
    /// kills all land after the write proves nothing about the kill, so it fails.
    func untilKilledMidOperation(_ what: String, reset: () throws -> Void, file: StaticString = #filePath, line: UInt = #line,
                                 _ attempt: () throws -> Bool) throws {
        for index in 1...Self.killAttempts {
            if index > 1 { try reset() }
            if try attempt() { return }
        }
        XCTFail("in \(Self.killAttempts) tries no kill -9 landed while \(what)", file: file, line: line)
    }

    /// `kill -9` of the daemon while `writer` writes, once `writer` has
    /// exited: true when the kill landed before the write returned (the
    /// writer was still running and the dead mount failed its write or close).
    func killPurgefs(midOperationOf writer: Process, file: StaticString = #filePath, line: UInt = #line) -> Bool {
        let running = writer.isRunning
        killPurgefs(users: [writer], file: file, line: line)
        return running && !writer.isRunning && writer.terminationStatus != 0
    }

    /// Removes `names` through the mount.
    func removeNames(_ names: [String]) throws {
        for name in names {
            guard unlink(m + "/" + name) == 0 else { throw SubprocessError("unlink \(name): \(Errno.name(errno))") }
        }
    }

    /// Where the readers look hardest, and where the writers write.
    static let hotOffsets = [0, 4096 * 5, size / 2, size - 4096]

    /// Puts `big` (`Self.big` random bytes) into the container, unmounted.
    func addBigFile() throws {
        XCTAssertEqual(unmountPurgefs(), [])
        try writeRandom(container + "/big", count: Self.big, seed: 5)
        XCTAssertEqual(chmod(container + "/big", 0o644), 0)
        try mountPurgefs()
    }

    /// Starts `dd` writing `byte` at `offset` of `path` (no truncation).
    func startWriting(_ byte: UInt8, at offset: Int, of path: String) throws -> Process {
        let input = fixture.base + "/byte"
        try Data([byte]).write(to: URL(fileURLWithPath: input))
        return try Subprocess.spawn(
            ["dd", "if=" + input, "of=" + path, "bs=1", "count=1", "seek=\(offset)", "conv=notrunc", "status=none"],
            stdoutPath: fixture.base + "/dd.stdout", stderrPath: fixture.base + "/dd.stderr")
    }

    /// The inode number of `name` in the backing directory.
    func backingInode(_ name: String) throws -> ino_t {
        try status(container + "/" + name).st_ino
    }

    /// The container holds these names and no others, through the mount and
    /// in the backing directory (no temporary `.purgefs-clone.*` left).
    func assertOnlyNames(_ names: Set<String>, file: StaticString = #filePath, line: UInt = #line) {
        let mounted = (try? FileManager.default.contentsOfDirectory(atPath: m)) ?? []
        let backing = ((try? FileManager.default.contentsOfDirectory(atPath: container)) ?? []).filter { $0 != ".purgefs" }
        XCTAssertEqual(Set(mounted), names, "names through the mount", file: file, line: line)
        XCTAssertEqual(Set(backing), names, "names in the backing directory", file: file, line: line)
    }

    /// After a clone and its original were renamed one over the other: only
    /// `survivor` is left, with the moved file's identity and the content.
    func assertRenamedOver(survivor: String, identity: ino_t, content: Data, file: StaticString = #filePath, line: UInt = #line) {
        assertOnlyNames([survivor], file: file, line: line)
        XCTAssertEqual(try? status(m + "/" + survivor).st_ino, identity, "the moved file's identity", file: file, line: line)
        XCTAssertEqual(try? status(m + "/" + survivor).st_nlink, 1, file: file, line: line)
        assertReads(survivor, content, "after the rename", file: file, line: line)
        XCTAssertEqual(numberAttr(m, "files"), 1, "files after the rename", file: file, line: line)
        XCTAssertEqual(numberAttr(m, "size"), UInt64(Self.size), file: file, line: line)
        XCTAssertEqual(numberAttr(m, "clone_savings"), 0, file: file, line: line)
        assertAccounting("after the rename", file: file, line: line)

        overwrite(m + "/" + survivor, at: 4096, Self.block, file: file, line: line)
        assertReads(survivor, patched(content, at: 4096, Self.block), "a write after the rename", file: file, line: line)
        XCTAssertEqual(unmountPurgefs(), [], file: file, line: line)
        XCTAssertNoThrow(try mountPurgefs(), file: file, line: line)
        XCTAssertEqual(try? status(m + "/" + survivor).st_ino, identity, "the identity after a remount", file: file, line: line)
        assertReads(survivor, patched(content, at: 4096, Self.block), "after the rename and a remount", file: file, line: line)
        XCTAssertEqual(numberAttr(m, "files"), 1, file: file, line: line)
        assertAccounting("after the rename and a remount", file: file, line: line)
    }

    /// The permission bits of `path` in octal as `stat -c %a` shows them: it
    /// asks `statx` for the mode alone, which the kernel answers from its
    /// cache unless that was invalidated (a plain `stat` asks for the ctime
    /// too, which a setxattr does invalidate). nil when stat failed.
    func cachedMode(_ path: String) -> String? {
        guard let result = try? Subprocess.run(["stat", "-c", "%a", path], timeout: 30), result.status == 0 else { return nil }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Sets a minimal access ACL (owner, group, other, as `cp -p` sends it)
    /// giving `mode`; 0 or -1 with errno.
    func setAccessACL(_ path: String, _ mode: mode_t) -> Int32 {
        func entry(_ tag: UInt16, _ perm: mode_t) -> [UInt8] {
            [UInt8(tag & 0xFF), UInt8(tag >> 8), UInt8(perm & 7), 0, 0xFF, 0xFF, 0xFF, 0xFF]
        }
        let value: [UInt8] = [2, 0, 0, 0] + entry(0x01, mode >> 6) + entry(0x04, mode >> 3) + entry(0x20, mode)
        return value.withUnsafeBytes { clinux_lsetxattr(path, "system.posix_acl_access", $0.baseAddress, $0.count, 0) }
    }

    /// Threads reading `path` with pread (its cached pages dropped first, so
    /// the reads reach purgefs) and comparing with `expected`, until `finish`.
    /// Half keep one descriptor opened before any write; half reopen each round.
    func startReaders(of path: String, expecting expected: Data, at offsets: [Int], count: Int = 4) -> ReadCheck {
        let check = ReadCheck()
        let chunk = 65536
        for index in 0..<count {
            Thread {
                var fd = open(path, O_RDONLY)
                var buffer = [UInt8](repeating: 0, count: chunk)
                var round = 0
                while !check.stopped {
                    if index % 2 == 1 {
                        close(fd)
                        fd = open(path, O_RDONLY)
                    }
                    guard fd >= 0 else {
                        check.record("open \(path): \(Errno.name(errno))")
                        break
                    }
                    let hot = offsets[round % offsets.count]
                    let offset = round % 2 == 0 ? max(0, hot - chunk / 2) : (round * 7919 * 4096 + index * 4096) % (expected.count - chunk)
                    let length = min(chunk, expected.count - offset)
                    _ = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)
                    let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, length, off_t(offset)) }
                    let same = n == length && expected.withUnsafeBytes { all in
                        buffer.withUnsafeBytes { memcmp(all.baseAddress! + offset, $0.baseAddress!, length) == 0 }
                    }
                    check.record(same ? nil : "reader \(index): \(n) bytes at \(offset) (of \(length)) differ from the expected")
                    round += 1
                }
                if fd >= 0 { close(fd) }
                check.exited()
            }.start()
        }
        XCTAssertTrue(eventually(timeout: 30) { check.reads >= 2 * count }, "the readers do not read")
        check.threads = count
        return check
    }
}

/// What the reader threads saw, shared with the test under a lock.
final class ReadCheck: @unchecked Sendable {
    private let lock = NSLock()
    private var stop = false
    private var done = 0
    private var count = 0
    private var failures: [String] = []
    var threads = 0

    var stopped: Bool { lock.withLock { stop } }
    var reads: Int { lock.withLock { count } }
    /// The first few reads that did not match.
    var mismatches: [String] { lock.withLock { Array(failures.prefix(5)) } }

    func record(_ failure: String?) {
        lock.withLock {
            count += 1
            if let failure { failures.append(failure) }
        }
    }

    func exited() { lock.withLock { done += 1 } }

    /// Lets every reader read a few more rounds after the writes, then stops them.
    func finish(file: StaticString = #filePath, line: UInt = #line) {
        let target = reads + 4 * threads
        XCTAssertTrue(eventually(timeout: 30) { reads >= target }, "the readers stopped reading", file: file, line: line)
        lock.withLock { stop = true }
        XCTAssertTrue(eventually(timeout: 30) { lock.withLock { done } == threads }, "the readers do not stop", file: file, line: line)
    }
}
