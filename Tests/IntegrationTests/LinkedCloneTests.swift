import Foundation
import Glibc
import XCTest

/// Clones on a backing filesystem without reflinks (an ext4 image made by
/// the test): `cp` inside the mount and `purgefs clone` share the whole
/// file until one of them is modified, which then gets a whole copy of its
/// own (SPEC, Clones: "whole-file copy on first modification is the
/// fallback elsewhere"). Every name stays an independent file to readers
/// and writers, through the mount and in the backing directory, across
/// remounts and `kill -9`; the accounting counts shared data once.
final class LinkedCloneTests: Ext4ImageTestCase {
    /// The file every test clones: big enough that a copy of it shows (the
    /// tests allow 1 MiB of growth for a clone), small enough to read often.
    static let big = 16 << 20
    /// What a test writes into a file: one block, unlike any random data.
    static let block = [UInt8](repeating: 0xAB, count: 4096)

    override func prepareContainer() throws {
        try FileManager.default.createDirectory(atPath: container + "/caches", withIntermediateDirectories: true)
        try writeRandom(container + "/big", count: Self.big)
        XCTAssertEqual(chmod(container + "/big", 0o644), 0)
    }

    // MARK: Sharing

    func testCopySharesDataAndCountsItOnce() throws {
        let before = backingFree()
        run(["cp", m + "/big", m + "/copy"])
        let grown = Int64(before) - Int64(backingFree())
        XCTAssertLessThan(grown, 1 << 20, "cp of a \(Self.big >> 20) MiB file grew the backing filesystem by \(grown) bytes")
        XCTAssertTrue(sameContent(m + "/big", m + "/copy"))
        XCTAssertEqual(contentID("big").errorCode, 0)
        XCTAssertEqual(contentID("big"), contentID("copy"))
        XCTAssertEqual(numberAttr(m + "/copy", "shared"), UInt64(Self.big))
        XCTAssertEqual(numberAttr(m + "/big", "shared"), UInt64(Self.big))
        // Two files of their own, their data stored once.
        XCTAssertEqual(numberAttr(m, "size"), UInt64(2 * Self.big))
        XCTAssertEqual(numberAttr(m, "files"), 2)
        XCTAssertEqual(numberAttr(m, "clone_savings"), UInt64(Self.big) + sparseSavings())
        let allocated = try XCTUnwrap(numberAttr(m, "allocated"))
        XCTAssertTrue((UInt64(Self.big)..<UInt64(Self.big + (1 << 20))).contains(allocated), "root allocated \(allocated): the data once")
        assertAccounting("after cp")
    }

    /// A whole-file copy (`copy_file_range`, as `hangload.py` makes them) of
    /// a file with holes: the holes are no data the clone shares, and the
    /// walk took them for a sparse clone's (`isSparseClone` once counted any
    /// not-flat file with a hole), 64 KiB more than the mount said.
    func testAWholeCopyOfAFileWithHolesIsAccountedAsTheWalkSays() throws {
        let fd = open(m + "/holes", O_WRONLY | O_CREAT, 0o644)
        XCTAssertGreaterThanOrEqual(fd, 0)
        let block = [UInt8](repeating: 0x4B, count: 4096)
        XCTAssertEqual(pwrite(fd, block, block.count, 0), block.count)
        XCTAssertEqual(pwrite(fd, block, block.count, 256 << 10), block.count)
        close(fd)
        let copy = "import os, sys; s = os.open(sys.argv[1], os.O_RDONLY); d = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644); "
            + "n = os.fstat(s).st_size\nwhile n > 0: n -= os.copy_file_range(s, d, n)"
        run(["python3", "-c", copy, m + "/holes", m + "/clone"])
        XCTAssertEqual(try status(container + "/clone").st_ino, try status(container + "/holes").st_ino, "a linked clone")
        assertAccounting("a whole copy of a file with holes")
    }

    /// `cp` onto a file that exists opens it with `O_TRUNC` rather than
    /// making it: it becomes a clone all the same, keeping its own mode.
    func testCopyOntoAnExistingFileIsAClone() throws {
        XCTAssertEqual(writeBytes(m + "/existing", [UInt8](repeating: 7, count: 5000)), 0)
        XCTAssertEqual(chmod(m + "/existing", 0o600), 0)
        let identity = try status(m + "/existing").st_ino
        let before = backingFree()
        run(["cp", m + "/big", m + "/existing"])
        let grown = Int64(before) - Int64(backingFree())
        XCTAssertLessThan(grown, 1 << 20, "cp onto an existing file grew the backing filesystem by \(grown) bytes")
        let original = try contents("big")
        assertReads("existing", original, "after cp onto it")
        XCTAssertEqual(contentID("existing"), contentID("big"))
        XCTAssertEqual(numberAttr(m + "/existing", "shared"), UInt64(Self.big))
        XCTAssertEqual(try status(m + "/existing").st_ino, identity, "the same file, now a clone")
        XCTAssertEqual(try status(m + "/existing").st_mode & 0o7777, 0o600)
        XCTAssertEqual(try status(m + "/big").st_mode & 0o7777, 0o644)
        overwrite(m + "/existing", at: 0, Self.block)
        assertReads("big", original, "after a write into the clone")
        assertReads("existing", patched(original, at: 0, Self.block), "after a write into the clone")
        assertAccounting("after cp onto an existing file")
    }

    /// Each rename of a member charges its group anew, which reads the
    /// backing file's status: through a descriptor closed at once, so the
    /// daemon's descriptors do not grow with a clone's renames (each one
    /// leaked one, which also held a deleted backing file's blocks).
    func testRenamingAMemberLeavesNoDescriptorOpen() throws {
        run(["cp", m + "/big", m + "/copy"])
        XCTAssertEqual(contentID("copy"), contentID("big"))
        let daemons = fixture.ownProcesses()
        XCTAssertEqual(daemons.count, 1, "one daemon")
        let pid = try XCTUnwrap(daemons.first)
        XCTAssertEqual(rename(m + "/copy", m + "/copy-0"), 0)
        let before = openDescriptors(of: pid).count
        for round in 1...40 {
            XCTAssertEqual(rename(m + "/copy-\(round - 1)", m + "/copy-\(round)"), 0)
        }
        let after = openDescriptors(of: pid).count
        XCTAssertLessThan(after, before + 10, "the daemon held \(before) descriptors, and \(after) after 40 renames of a clone")
        XCTAssertEqual(contentID("copy-40"), contentID("big"), "still a clone")
    }

    // MARK: Independence

    func testClonesAreIndependentFiles() throws {
        XCTAssertEqual(setAttr(m + "/big", "user.origin", "original"), 0)
        run(["cp", m + "/big", m + "/clone"])
        let original = try contents("big")
        let a = try status(m + "/big"), b = try status(m + "/clone")
        XCTAssertNotEqual(a.st_ino, b.st_ino)
        XCTAssertEqual(a.st_nlink, 1)
        XCTAssertEqual(b.st_nlink, 1)

        // Modes are each file's own.
        XCTAssertEqual(chmod(m + "/clone", 0o600), 0)
        XCTAssertEqual(try status(m + "/big").st_mode & 0o7777, 0o644)
        XCTAssertEqual(chmod(m + "/big", 0o640), 0)
        XCTAssertEqual(try status(m + "/clone").st_mode & 0o7777, 0o600)

        // So are extended attributes; plain cp does not copy them.
        run(["setfattr", "-n", "user.x", "-v", "clone", m + "/clone"])
        XCTAssertEqual(getAttr(m + "/big", "user.x"), .failed(ENODATA))
        XCTAssertEqual(getAttr(m + "/clone", "user.origin"), .failed(ENODATA))
        XCTAssertEqual(getAttr(m + "/big", "user.origin"), .value("original"))
        XCTAssertEqual(getAttr(m + "/clone", "user.x"), .value("clone"))
        XCTAssertEqual(setAttr(m + "/big", "user.late", "original"), 0)
        XCTAssertEqual(getAttr(m + "/clone", "user.late"), .failed(ENODATA))

        // So are owners.
        XCTAssertEqual(chown(m + "/clone", 1234, 1234), 0)
        XCTAssertEqual(try status(m + "/big").st_uid, 0)
        XCTAssertEqual(try status(m + "/clone").st_uid, 1234)

        // A 4 KiB write into the clone changes only the clone.
        overwrite(m + "/clone", at: 8192, Self.block)
        assertReads("big", original, "after a write into the clone")
        let copy = try contents("clone")
        XCTAssertEqual(copy.count, original.count)
        XCTAssertEqual(copy, patched(original, at: 8192, Self.block), "the clone has the new bytes and the rest intact")
        XCTAssertNotEqual(contentID("big"), contentID("clone"))
        XCTAssertEqual(numberAttr(m + "/big", "shared"), sparseShared("big"))
        XCTAssertEqual(numberAttr(m + "/clone", "shared"), sparseShared("clone"))
        XCTAssertEqual(numberAttr(m, "clone_savings"), sparseSavings())

        // Each keeps its own metadata through the copy the write made.
        XCTAssertEqual(try status(m + "/big").st_mode & 0o7777, 0o640)
        XCTAssertEqual(try status(m + "/clone").st_mode & 0o7777, 0o600)
        XCTAssertEqual(getAttr(m + "/clone", "user.x"), .value("clone"))
        XCTAssertEqual(getAttr(m + "/clone", "user.origin"), .failed(ENODATA))
        XCTAssertEqual(getAttr(m + "/big", "user.origin"), .value("original"))
        XCTAssertEqual(try status(m + "/big").st_uid, 0)
        XCTAssertEqual(try status(m + "/clone").st_uid, 1234)
        assertAccounting("after a write into the clone")
    }

    func testWritesToTheOriginalDoNotShowInTheClone() throws {
        run(["cp", m + "/big", m + "/clone"])
        let original = try contents("big")
        overwrite(m + "/big", at: 0, Self.block)
        assertReads("clone", original, "after a write to the original")
        assertReads("big", patched(original, at: 0, Self.block), "after a write to the original")
        XCTAssertNotEqual(contentID("big"), contentID("clone"))
        XCTAssertEqual(numberAttr(m + "/clone", "shared"), sparseShared("clone"))
        assertAccounting("after a write to the original")
    }

    func testBothOpenAtOnce() throws {
        run(["cp", m + "/big", m + "/clone"])
        let original = try contents("big")
        // Every descriptor is opened while the two still share their data.
        let reader = open(m + "/big", O_RDONLY)
        let cloneReader = open(m + "/clone", O_RDONLY)
        let writer = open(m + "/clone", O_RDWR)
        defer { for fd in [reader, cloneReader, writer] where fd >= 0 { close(fd) } }
        XCTAssertGreaterThanOrEqual(reader, 0)
        XCTAssertGreaterThanOrEqual(cloneReader, 0)
        XCTAssertGreaterThanOrEqual(writer, 0, "open the clone O_RDWR: \(Errno.name(errno))")

        let bytes = [UInt8](repeating: 0x11, count: 100)
        XCTAssertEqual(bytes.withUnsafeBytes { pwrite(writer, $0.baseAddress, 100, 0) }, 100)
        XCTAssertEqual(ftruncate(writer, 4096), 0, "ftruncate the clone: \(Errno.name(errno))")
        let expected = patched(original.prefix(4096), at: 0, bytes)
        XCTAssertEqual(readAll(reader), original, "the original's reader still reads the original")
        XCTAssertEqual(readAll(cloneReader), expected, "the clone's other descriptor reads the clone as written: one file")
        XCTAssertEqual(readAll(writer), expected)

        for fd in [reader, cloneReader, writer] { close(fd) }
        assertReads("big", original, "after writing and truncating the open clone")
        assertReads("clone", expected, "after writing and truncating the open clone")
        assertAccounting("after writing and truncating the open clone")
    }

    /// Every call that modifies a file breaks it away from its clones, and
    /// only it, whether it is the clone or the original: O_TRUNC, fallocate,
    /// copy_file_range into it, a shared mapping.
    func testEveryWayOfModifyingEitherFile() throws {
        // Each way modifies the file at `path`, whose content was `before`,
        // and returns its expected content, or nil when a call failed.
        let ways: [(String, (String, Data) -> Data?)] = [
            ("open with O_TRUNC", { path, _ in
                writeBytes(path, Self.block) == 0 ? Data(Self.block) : nil
            }),
            ("fallocate beyond the end", { path, before in
                let fd = open(path, O_RDWR)
                defer { close(fd) }
                return fd >= 0 && posix_fallocate(fd, 0, off_t(before.count + 4096)) == 0 ? before + Data(count: 4096) : nil
            }),
            ("copy_file_range into it", { path, before in
                XCTAssertEqual(writeBytes(self.m + "/source", Self.block), 0)
                let source = open(self.m + "/source", O_RDONLY)
                let destination = open(path, O_WRONLY)
                defer { close(source); close(destination); unlink(self.m + "/source") }
                var inOffset: Int64 = 0, outOffset: Int64 = 8192
                return clinuxCopy(source, &inOffset, destination, &outOffset, 4096) == 4096 ? self.patched(before, at: 8192, Self.block) : nil
            }),
            ("a shared mapping", { path, before in
                let fd = open(path, O_RDWR)
                defer { close(fd) }
                guard fd >= 0, let map = mmap(nil, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), map != MAP_FAILED else { return nil }
                Self.block.withUnsafeBytes { map.advanced(by: 4096).copyMemory(from: $0.baseAddress!, byteCount: 4096) }
                defer { munmap(map, 8192) }
                return msync(map, 8192, MS_SYNC) == 0 ? self.patched(before, at: 4096, Self.block) : nil
            }),
        ]
        // Every pair starts from an original no one has written through the
        // mount (see testACopyRightAfterItsWriterClosedIsAClone): sources
        // made in the backing directory, then a remount.
        let pairs = ways.flatMap { way in [(way, "clone"), (way, "source")] }
        XCTAssertEqual(unmountPurgefs(), [])
        for index in pairs.indices { try writeRandom(container + "/source\(index)", count: 4 << 20, seed: UInt64(index)) }
        try mountPurgefs()
        for (index, ((way, modify), side)) in pairs.enumerated() {
            let (source, clone) = ("source\(index)", "clone\(index)")
            let label = "after \(way) on the \(side)"
            run(["cp", m + "/" + source, m + "/" + clone])
            XCTAssertEqual(contentID(clone), contentID(source), label)
            let before = try contents(source)
            let (target, other) = side == "clone" ? (clone, source) : (source, clone)
            let expected = modify(m + "/" + target, before)
            XCTAssertNotNil(expected, "\(label): \(Errno.name(errno))")
            assertReads(other, before, label)
            if let expected { assertReads(target, expected, label) }
            XCTAssertNotEqual(contentID(clone), contentID(source), label)
            assertAccounting(label)
        }
    }

    /// A file written and closed, then copied at once, as an app does: the
    /// copy is a clone (SPEC: `cp` inside the mount makes a clone), though
    /// the kernel tells the daemon of the close (RELEASE) asynchronously.
    func testACopyRightAfterItsWriterClosedIsAClone() throws {
        let bytes = [UInt8](try contents("big"))
        for round in 0..<4 {
            XCTAssertEqual(writeBytes(m + "/big", bytes), 0)
            run(["cp", m + "/big", m + "/copy"])
            XCTAssertEqual(contentID("copy"), contentID("big"), "round \(round): a copy made right after its writer closed is a clone")
            run(["cp", m + "/copy", m + "/again"])
            XCTAssertEqual(contentID("again"), contentID("copy"), "round \(round): a copy of a copy just made is a clone too")
            assertAccounting("round \(round)")
            XCTAssertEqual(unlink(m + "/copy"), 0)
            XCTAssertEqual(unlink(m + "/again"), 0)
        }
    }

    func testAnUnlinkedCloneStillOpenKeepsItsContent() throws {
        run(["cp", m + "/big", m + "/clone"])
        let original = try contents("big")
        let reader = open(m + "/clone", O_RDONLY)
        XCTAssertGreaterThanOrEqual(reader, 0)
        defer { close(reader) }
        XCTAssertEqual(unlink(m + "/clone"), 0)
        overwrite(m + "/big", at: 0, Self.block)
        XCTAssertEqual(readAll(reader), original, "the unlinked clone still reads its content")
        assertReads("big", patched(original, at: 0, Self.block), "after writing the original of an unlinked clone")
    }

    func testAWriterOfTheCloneOpenWhileTheOriginalBreaksAway() throws {
        run(["cp", m + "/big", m + "/clone"])
        let original = try contents("big")
        let bigWriter = open(m + "/big", O_RDWR)
        let cloneWriter = open(m + "/clone", O_RDWR)
        defer { close(bigWriter); close(cloneWriter) }
        XCTAssertGreaterThanOrEqual(bigWriter, 0)
        XCTAssertGreaterThanOrEqual(cloneWriter, 0)
        // The original's first write moves the clone to a copy of its own;
        // the clone's writer, opened before, must write there.
        let other = [UInt8](repeating: 0xCD, count: 4096)
        XCTAssertEqual(Self.block.withUnsafeBytes { pwrite(bigWriter, $0.baseAddress, 4096, 0) }, 4096)
        XCTAssertEqual(other.withUnsafeBytes { pwrite(cloneWriter, $0.baseAddress, 4096, 4096) }, 4096)
        XCTAssertEqual(Self.block.withUnsafeBytes { pwrite(bigWriter, $0.baseAddress, 4096, 8192) }, 4096)
        XCTAssertEqual(readAll(bigWriter), patched(patched(original, at: 0, Self.block), at: 8192, Self.block))
        XCTAssertEqual(readAll(cloneWriter), patched(original, at: 4096, other))
        close(bigWriter)
        close(cloneWriter)
        assertReads("big", patched(patched(original, at: 0, Self.block), at: 8192, Self.block), "after writing both open files")
        assertReads("clone", patched(original, at: 4096, other), "after writing both open files")
        assertAccounting("after writing both open files")
    }

    func testTruncatingACloneLeavesTheOriginal() throws {
        run(["cp", m + "/big", m + "/clone"])
        let original = try contents("big")
        run(["truncate", "-s", "0", m + "/clone"])
        XCTAssertEqual(fileSize(m + "/clone"), 0)
        XCTAssertEqual(fileSize(container + "/clone"), 0)
        assertReads("big", original, "after truncating the clone")
        XCTAssertEqual(numberAttr(m + "/big", "shared"), sparseShared("big"))
        XCTAssertEqual(numberAttr(m, "clone_savings"), sparseSavings())
        assertAccounting("after truncating the clone")
    }

    func testUnlinkingTheOriginalLeavesTheClone() throws {
        run(["cp", m + "/big", m + "/clone"])
        let original = try contents("big")
        XCTAssertEqual(unlink(m + "/big"), 0)
        assertReads("clone", original, "after unlinking the original")
        XCTAssertEqual(numberAttr(m + "/clone", "shared"), sparseShared("clone"))
        XCTAssertEqual(numberAttr(m, "clone_savings"), sparseSavings())
        XCTAssertEqual(numberAttr(m, "files"), 1)
        XCTAssertEqual(try status(m + "/clone").st_nlink, 1)
        assertAccounting("after unlinking the original")
    }

    func testARenamedCloneStaysIndependent() throws {
        run(["cp", m + "/big", m + "/clone"])
        let original = try contents("big")
        XCTAssertEqual(mkdir(m + "/moved", 0o755), 0)
        XCTAssertEqual(rename(m + "/clone", m + "/moved/clone"), 0)
        XCTAssertEqual(contentID("moved/clone"), contentID("big"), "a rename keeps the relationship")
        XCTAssertEqual(numberAttr(m + "/moved/clone", "shared"), UInt64(Self.big))
        overwrite(m + "/moved/clone", at: 4096, Self.block)
        assertReads("big", original, "after writing the renamed clone")
        assertReads("moved/clone", patched(original, at: 4096, Self.block), "after writing the renamed clone")
        XCTAssertFalse(exists(container + "/clone"))
        assertAccounting("after writing the renamed clone")
    }

    func testAWriterOpenedBeforeTheCopyNeverReachesTheCopy() throws {
        let writer = open(m + "/big", O_RDWR)
        XCTAssertGreaterThanOrEqual(writer, 0)
        defer { close(writer) }
        run(["cp", m + "/big", m + "/clone"])
        let original = try contents("clone")
        XCTAssertEqual(Self.block.withUnsafeBytes { pwrite(writer, $0.baseAddress, 4096, 0) }, 4096)
        XCTAssertEqual(fsync(writer), 0)
        assertReads("clone", original, "after a write through a descriptor opened before the copy")
        assertReads("big", patched(original, at: 0, Self.block), "after a write through a descriptor opened before the copy")
        XCTAssertNotEqual(contentID("big"), contentID("clone"))
    }

    func testCopyPreservingAttributesKeepsThemApart() throws {
        XCTAssertEqual(chmod(m + "/big", 0o640), 0)
        setTimes(m + "/big", 1_000_000_000)
        run(["cp", "-p", m + "/big", m + "/clone"])
        XCTAssertEqual(contentID("big"), contentID("clone"))
        var clone = try status(m + "/clone")
        XCTAssertEqual(clone.st_mode & 0o7777, 0o640)
        XCTAssertEqual(clone.st_mtim.tv_sec, 1_000_000_000)
        XCTAssertEqual(chmod(m + "/clone", 0o604), 0)
        setTimes(m + "/clone", 1_500_000_000)
        let big = try status(m + "/big")
        XCTAssertEqual(big.st_mode & 0o7777, 0o640)
        XCTAssertEqual(big.st_mtim.tv_sec, 1_000_000_000)
        clone = try status(m + "/clone")
        XCTAssertEqual(clone.st_mode & 0o7777, 0o604)
        XCTAssertEqual(clone.st_mtim.tv_sec, 1_500_000_000)
        XCTAssertEqual(numberAttr(m + "/clone", "shared"), UInt64(Self.big), "metadata changes do not break the clone")
    }

    func testHardLinksBesideClones() throws {
        run(["cp", m + "/big", m + "/clone"])
        let original = try contents("big")
        // A hard link of the original is the original by another name.
        XCTAssertEqual(link(m + "/big", m + "/hard"), 0)
        XCTAssertEqual(try status(m + "/big").st_nlink, 2)
        XCTAssertEqual(try status(m + "/hard").st_ino, try status(m + "/big").st_ino)
        XCTAssertEqual(try status(m + "/clone").st_nlink, 1)
        overwrite(m + "/hard", at: 0, Self.block)
        assertReads("big", patched(original, at: 0, Self.block), "after a write through a hard link of the original")
        assertReads("clone", original, "after a write through a hard link of the original")

        // A hard link of a clone is the clone by another name.
        run(["cp", m + "/clone", m + "/second"])
        XCTAssertEqual(contentID("clone"), contentID("second"))
        XCTAssertEqual(link(m + "/second", m + "/second-link"), 0)
        XCTAssertEqual(try status(m + "/second").st_nlink, 2)
        overwrite(m + "/second-link", at: 4096, Self.block)
        assertReads("second", patched(original, at: 4096, Self.block), "after a write through a hard link of a clone")
        assertReads("clone", original, "after a write through a hard link of a clone")
        assertReads("big", patched(original, at: 0, Self.block), "after a write through a hard link of a clone")
    }

    func testRenamingOneOverTheOtherLeavesOneFile() throws {
        run(["cp", m + "/big", m + "/clone"])
        run(["cp", m + "/big", m + "/third"])
        let original = try contents("big")
        XCTAssertEqual(rename(m + "/clone", m + "/big"), 0)
        XCTAssertEqual(rename(m + "/big", m + "/third"), 0)
        assertReads("third", original, "after renaming the clones over each other")
        XCTAssertFalse(exists(m + "/big"))
        XCTAssertFalse(exists(m + "/clone"))
        XCTAssertEqual(numberAttr(m, "files"), 1)
        XCTAssertEqual(numberAttr(m + "/third", "shared"), sparseShared("third"))
        XCTAssertEqual(numberAttr(m, "clone_savings"), sparseSavings())
        assertAccounting("after renaming the clones over each other")
        overwrite(m + "/third", at: 0, Self.block)
        assertReads("third", patched(original, at: 0, Self.block), "after writing the one left")
    }

    // MARK: Persistence

    func testAChainOfClonesAfterARemount() throws {
        run(["cp", m + "/big", m + "/a"])
        run(["cp", m + "/a", m + "/b"])
        let original = try contents("big")
        XCTAssertEqual(unmountPurgefs(), [])
        try mountPurgefs()
        XCTAssertEqual(contentID("big"), contentID("b"))
        XCTAssertEqual(numberAttr(m, "clone_savings"), UInt64(2 * Self.big) + sparseSavings())
        overwrite(m + "/big", at: 0, Self.block)
        assertReads("a", original, "after a write to the original after a remount")
        assertReads("b", original, "after a write to the original after a remount")
        XCTAssertEqual(contentID("a"), contentID("b"))
        XCTAssertEqual(numberAttr(m + "/a", "shared"), UInt64(Self.big))
        overwrite(m + "/a", at: 4096, Self.block)
        assertReads("b", original, "after a write to a clone of the clone")
        assertReads("a", patched(original, at: 4096, Self.block), "after a write to a clone of the clone")
        XCTAssertEqual(numberAttr(m, "clone_savings"), sparseSavings())
        assertAccounting("after writing every clone of a chain")
        XCTAssertEqual(unmountPurgefs(), [])
        try mountPurgefs()
        assertReads("big", patched(original, at: 0, Self.block), "after the last remount")
        assertReads("b", original, "after the last remount")
        assertAccounting("after the last remount")
    }


    func testRelationshipsSurviveRemount() throws {
        run(["cp", m + "/big", m + "/clone"])
        let original = try contents("big")
        let ids = [contentID("big"), contentID("clone")]
        let savings = numberAttr(m, "clone_savings")
        XCTAssertEqual(unmountPurgefs(), [])
        try mountPurgefs()
        XCTAssertEqual([contentID("big"), contentID("clone")], ids)
        XCTAssertEqual(ids[0], ids[1])
        XCTAssertEqual(numberAttr(m, "clone_savings"), savings)
        XCTAssertEqual(numberAttr(m, "clone_savings"), UInt64(Self.big) + sparseSavings())
        XCTAssertEqual(numberAttr(m + "/clone", "shared"), UInt64(Self.big))
        XCTAssertEqual(numberAttr(m, "files"), 2)
        XCTAssertEqual(try status(m + "/big").st_nlink, 1)
        XCTAssertEqual(try status(m + "/clone").st_nlink, 1)
        assertAccounting("after a remount")

        overwrite(m + "/clone", at: 0, Self.block)
        assertReads("big", original, "after a write into the clone after a remount")
        assertReads("clone", patched(original, at: 0, Self.block), "after a write into the clone after a remount")
        XCTAssertNotEqual(contentID("big"), contentID("clone"))
        assertAccounting("after a write into the clone after a remount")
    }

    func testRelationshipsSurviveKill9() throws {
        run(["cp", m + "/big", m + "/caches/copy"])
        run(["cp", m + "/big", m + "/third"])
        overwrite(m + "/third", at: 4096, Self.block)
        let original = try contents("big")
        let ids = ["big", "caches/copy", "third"].map(contentID)
        killPurgefs()
        try mountPurgefs()

        XCTAssertEqual(["big", "caches/copy", "third"].map(contentID), ids)
        XCTAssertEqual(ids[0], ids[1])
        XCTAssertNotEqual(ids[0], ids[2])
        XCTAssertEqual(numberAttr(m, "clone_savings"), UInt64(Self.big) + sparseSavings())
        assertReads("big", original, "after kill -9 and a remount")
        assertReads("caches/copy", original, "after kill -9 and a remount")
        assertReads("third", patched(original, at: 4096, Self.block), "after kill -9 and a remount")
        assertAccounting("after kill -9 and a remount")

        overwrite(m + "/caches/copy", at: 0, Self.block)
        assertReads("big", original, "after a write into the clone after kill -9")
        assertReads("caches/copy", patched(original, at: 0, Self.block), "after a write into the clone after kill -9")
        assertAccounting("after a write into the clone after kill -9")
    }

    func testBackingNamesReadTheirOwnContentWhenUnmounted() throws {
        for name in ["a", "b", "c", "d"] { run(["cp", m + "/big", m + "/" + name]) }
        let original = try contents("big")
        overwrite(m + "/a", at: 0, Self.block)
        overwrite(m + "/big", at: 8192, [UInt8](repeating: 0x5A, count: 4096))
        run(["truncate", "-s", "4096", m + "/c"])
        let names = ["big", "a", "b", "c", "d"]
        let expected = try names.map(contents)
        XCTAssertEqual(expected[2], original, "b was never written")
        XCTAssertEqual(expected[4], original, "d was never written")
        XCTAssertEqual(expected[3], original.prefix(4096))
        // A clone that shares blocks is no plain file until flattened (user.purgefs.flat).
        if names.contains(where: isSparseClone) { run([fixture.binary, "flatten", m]) }
        XCTAssertEqual(unmountPurgefs(), [])
        let backing = try FileManager.default.contentsOfDirectory(atPath: container).filter { $0 != ".purgefs" }
        XCTAssertEqual(Set(backing), Set(names + ["caches"]), "the backing directory holds the names, nothing else")
        for (name, content) in zip(names, expected) {
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: container + "/" + name)), content, "backing \(name) after unmount")
        }
    }

    // MARK: purgefs clone

    func testCloneCommand() throws {
        XCTAssertEqual(chmod(m + "/big", 0o640), 0)
        let before = backingFree()
        let made = try Subprocess.run([fixture.binary, "clone", m + "/big", m + "/caches/c"], timeout: 30)
        XCTAssertEqual(made.status, 0, "\(made)")
        let grown = Int64(before) - Int64(backingFree())
        XCTAssertLessThan(grown, 1 << 20, "purgefs clone of a \(Self.big >> 20) MiB file grew the backing filesystem by \(grown) bytes")
        XCTAssertTrue(sameContent(m + "/big", m + "/caches/c"))
        XCTAssertEqual(try status(m + "/caches/c").st_mode & 0o7777, 0o640)
        XCTAssertEqual(contentID("big"), contentID("caches/c"))
        XCTAssertEqual(numberAttr(m + "/caches/c", "shared"), UInt64(Self.big))
        assertAccounting("after purgefs clone")

        // DEST exists: a clone, or any other file.
        let again = try Subprocess.run([fixture.binary, "clone", m + "/big", m + "/caches/c"], timeout: 30)
        XCTAssertEqual(again.status, 1, "\(again)")
        XCTAssertTrue(again.stderr.contains("File exists"), again.stderr)
        XCTAssertEqual(writeBytes(m + "/other", [1, 2, 3]), 0)
        let onOther = try Subprocess.run([fixture.binary, "clone", m + "/big", m + "/other"], timeout: 30)
        XCTAssertEqual(onOther.status, 1, "\(onOther)")
        XCTAssertTrue(onOther.stderr.contains("File exists"), onOther.stderr)
        XCTAssertEqual(readBytes(m + "/other"), [1, 2, 3])
        XCTAssertTrue(sameContent(m + "/big", m + "/caches/c"))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: m + "/caches"), ["c"], "no temporary name is left")
    }

    // MARK: Space

    func testABreakPurgesFirstAndFailsWithENOSPCWhenNothingIsLeft() throws {
        // The break copies the whole file (block sharing off from the remount below on): that copy is what it tests.
        daemonEnvironment["PURGEFS_BLOCK_SHARING"] = "0"
        try writeRandom(m + "/caches/junk", count: Self.big + (2 << 20), seed: 9)
        run(["cp", m + "/big", m + "/clone"])
        XCTAssertEqual(unmountPurgefs(), [])
        // The monitor never purges (low=0): only writes do.
        try mountPurgefs(options: ["capacity=1T", "low=0", "high=0"])
        let used = try XCTUnwrap(numberAttr(m, "allocated"))
        XCTAssertEqual(setAttr(m, pf("capacity"), String(used + (1 << 20))), 0, "1 MiB free")
        let original = try contents("big")

        // Breaking the clone copies the whole file: it purges the cache (2 MiB bigger) first.
        overwrite(m + "/clone", at: 0, Self.block)
        assertPurged("caches/junk", "the write purged the cache first")
        XCTAssertTrue(readPurgeLog(container).contains { $0.reason == "write" && $0.path == "caches/junk" },
                      "purge log: \(readPurgeLog(container).map { "\($0.reason) \($0.path)" })")
        assertReads("big", original, "after a write that purged to break the clone")
        assertReads("clone", patched(original, at: 0, Self.block), "after a write that purged to break the clone")
        assertAccounting("after a write that purged to break the clone")

        // About 3 MiB left and nothing purgeable: breaking another clone does
        // not fit. ENOSPC (at the open for writing or at the write), and
        // neither file changes: the second clone still shares the original.
        run(["cp", m + "/big", m + "/second"])
        let ids = [contentID("big"), contentID("second")]
        XCTAssertEqual(ids[0], ids[1])
        XCTAssertEqual(tryOverwrite(m + "/second", at: 0, Self.block), ENOSPC)
        assertReads("big", original, "after ENOSPC")
        assertReads("second", original, "after ENOSPC")
        XCTAssertEqual([contentID("big"), contentID("second")], ids, "the clone that did not fit still shares")
        XCTAssertEqual(numberAttr(m + "/second", "shared"), UInt64(Self.big))
        // Nor does the original's: it would leave the clone a copy of its own.
        XCTAssertEqual(tryOverwrite(m + "/big", at: 0, Self.block), ENOSPC)
        XCTAssertEqual(truncate(m + "/big", 0) == 0 ? 0 : errno, ENOSPC)
        assertReads("big", original, "after ENOSPC on the original")
        assertReads("second", original, "after ENOSPC on the original")
        XCTAssertEqual([contentID("big"), contentID("second")], ids, "the original that did not fit still shares")
        assertAccounting("after ENOSPC")
    }

    /// SPEC: `purgeable` is "bytes that purging could free". Purging a clone
    /// that shares all its data with a file outside the zones frees nothing
    /// (the data stays the original's), so it adds 0; once written, a clone
    /// holds a whole copy of its own on ext4, and purging it frees that copy,
    /// no more.
    func testPurgingAClonefreesOnlyWhatItDidNotShare() throws {
        run(["cp", m + "/big", m + "/caches/a"])
        run(["cp", m + "/big", m + "/caches/b"])
        XCTAssertTrue(eventually { getAttr(m, pf("purgeable")) == .value("0") }, "purgeable: \(getAttr(m, pf("purgeable")))")
        XCTAssertEqual(getAttr(m + "/caches", pf("purgeable")), .value("0"))

        overwrite(m + "/caches/b", at: 0, Self.block)
        let own = try XCTUnwrap(numberAttr(m + "/caches/b", "allocated"))
        // Its written block alone when it shares the others (block sharing).
        XCTAssertGreaterThanOrEqual(own, isSparseClone("caches/b") ? 4096 : UInt64(Self.big), "b holds a copy of its own")
        XCTAssertTrue(eventually { getAttr(m, pf("purgeable")) == .value(String(own)) }, "purgeable: \(getAttr(m, pf("purgeable"))), b's own data \(own)")

        let original = try contents("big")
        let purgedBefore = try XCTUnwrap(numberAttr(m, "purged_bytes"))
        XCTAssertEqual(setAttr(m, pf("purge"), "all"), 0)
        assertPurged("caches/a", "purge all takes every candidate")
        assertPurged("caches/b", "purge all takes every candidate")
        XCTAssertEqual(try XCTUnwrap(numberAttr(m, "purged_bytes")) - purgedBefore, own, "purging frees only b's own copy")
        let log = readPurgeLog(container)
        XCTAssertEqual(log.first { $0.path == "caches/a" }?.bytes, 0, "a shared everything: purging it freed nothing")
        XCTAssertEqual(log.first { $0.path == "caches/b" }?.bytes, own)
        assertReads("big", original, "after purging its clones")
        XCTAssertEqual(numberAttr(m + "/big", "shared"), sparseShared("big"))
        XCTAssertEqual(numberAttr(m, "clone_savings"), sparseSavings())
        assertAccounting("after purging the clones")
    }

    /// SPEC again: `purgeable` is what purging could free. An original in
    /// a zone whose clone lives outside every zone frees nothing when
    /// purged: the clone keeps the data.
    func testPurgingAnOriginalWhoseCloneLivesOnFreesNothing() throws {
        try writeRandom(m + "/caches/original", count: 8 << 20, seed: 3)
        let original = try contents("caches/original")
        run(["cp", m + "/caches/original", m + "/kept"])
        XCTAssertTrue(eventually { getAttr(m, pf("purgeable")) == .value("0") }, "purgeable: \(getAttr(m, pf("purgeable")))")
        let purgedBefore = try XCTUnwrap(numberAttr(m, "purged_bytes"))
        let allocatedBefore = try XCTUnwrap(numberAttr(m, "allocated"))
        XCTAssertEqual(setAttr(m, pf("purge"), "all"), 0)
        assertPurged("caches/original", "purge all")
        assertReads("kept", original, "after purging its original")
        XCTAssertEqual(try XCTUnwrap(numberAttr(m, "purged_bytes")) - purgedBefore, 0, "the purge freed nothing")
        XCTAssertEqual(numberAttr(m, "allocated"), allocatedBefore, "the data is still stored, once")
        XCTAssertEqual(numberAttr(m + "/kept", "shared"), sparseShared("kept"))
        assertAccounting("after purging an original whose clone lives on")
    }

    // MARK: Helpers

    /// Asserts that `name` was purged: gone from the backing directory at
    /// once, and from the mount once the kernel has the daemon's notice
    /// (sent asynchronously, so the kernel's name cache may lag a moment).
    func assertPurged(_ name: String, _ label: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertFalse(exists(container + "/" + name), "\(label): \(name) is still in the backing directory", file: file, line: line)
        XCTAssertTrue(eventually { !exists(m + "/" + name) }, "\(label): \(name) is still in the mount", file: file, line: line)
    }
}
