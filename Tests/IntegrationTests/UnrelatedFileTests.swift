import Foundation
import Glibc
import Synchronization
import XCTest

/// No request waits on another file's I/O: while one file's clone work is
/// held in the backing store (its image's device suspended, so the I/O
/// cannot finish), an `open(O_TRUNC)`, write and close of an unrelated file
/// completes. Before, a linked clone's break held one lock that every
/// `O_TRUNC` open of any file took (`breakLock`), and a reflink member's
/// write held the clone book's one lock (taken by every write's `resized`)
/// across its journal `fdatasync` and `FIEMAP_FLAG_SYNC`.
protocol UnrelatedFileScenario: LoopImageTestCase {}

extension UnrelatedFileScenario {
    static var big: Int { 8 << 20 }

    func prepareFiles() throws {
        XCTAssertEqual(mkdir(container + "/Documents", 0o755), 0)
        try writeRandom(container + "/Documents/big", count: Self.big)
        try Data("unrelated".utf8).write(to: URL(fileURLWithPath: container + "/Documents/other"))
    }

    /// Starts `work` (a write into the clone) on a thread of its own with the
    /// image suspended, waits until the daemon sleeps on the disk in a call
    /// `inCall` accepts, then truncates, writes and closes `Documents/other`
    /// and checks it completes (against a deadline) while `work` still waits.
    ///
    /// Just before the image stops, `rehearse` (a change of the clone like
    /// `work`'s, elsewhere in it) and the unrelated file's truncate and write
    /// run once with the image live: so the backing filesystem's metadata
    /// both need (XFS reads its AGF to find a write's shared extents) is in
    /// memory. Else the kernel may have dropped it meanwhile (memory
    /// reclaim, another process's `drop_caches`), and `work` or the
    /// unrelated file would wait for the held image reading it back, outside
    /// anything the daemon holds: a test that fails, or proves nothing.
    func assertUnrelatedOpenCompletes(rehearse: () -> Void = {}, while work: @escaping @Sendable () -> Int,
                                      _ inCall: @escaping ([String], String) -> Bool) throws {
        let path = m + "/Documents/other"
        rehearse()
        XCTAssertEqual(writeBytes(path, Array("rehearsal".utf8)), 0)
        sync()
        try suspendImage()
        let heldWork = Completion()
        Thread.detachNewThread { heldWork.finish(work()) }
        let pids = fixture.ownProcesses()
        guard pids.contains(where: { pid in waitForThreadInDiskSleep(of: pid, inCall) }) else {
            let threads = describeThreads(of: pids)
            resumeImage()
            XCTFail("the daemon never waited for the held I/O in the calls the test looks for; its threads (\(pids)): \(threads)")
            return
        }
        let unrelated = Completion()
        Thread.detachNewThread {
            let descriptor = open(path, O_WRONLY | O_TRUNC)
            guard descriptor >= 0 else { return unrelated.finish(-Int(errno)) }
            let written = Glibc.write(descriptor, "fresh", 5)
            close(descriptor)
            unrelated.finish(written)
        }
        let done = eventually(timeout: 20) { unrelated.result != nil }
        XCTAssertTrue(done, "an open(O_TRUNC), write and close of an unrelated file waited for the held clone work; the daemon's threads: \(done ? "" : describeThreads(of: pids))")
        let held = heldWork.result == nil
        XCTAssertTrue(held, "the clone work did not wait for the suspended image: the test proved nothing; the daemon's threads: \(held ? "" : describeThreads(of: pids))")
        resumeImage()
        XCTAssertTrue(eventually(timeout: 60) { heldWork.result != nil && unrelated.result != nil }, "nothing finished once the image resumed")
        XCTAssertEqual(unrelated.result, 5)
        XCTAssertEqual(heldWork.result, 1)
        XCTAssertEqual(try String(contentsOfFile: container + "/Documents/other", encoding: .utf8), "fresh")
    }
}

/// A result handed from a worker thread.
final class Completion: Sendable {
    private let value = Mutex<Int?>(nil)
    func finish(_ result: Int) { value.withLock { $0 = result } }
    var result: Int? { value.withLock { $0 } }
}

/// Linked clones (ext4): a break copies the whole file; its read of the
/// shared data is held.
final class LinkedCloneBreakIsolationTests: Ext4ImageTestCase, UnrelatedFileScenario {
    override var throughPausableStore: Bool { true }
    override func prepareContainer() throws { try prepareFiles() }

    func testUnrelatedOpenDoesNotWaitForABreak() throws {
        // A whole copy to hold: block sharing copies one block at a first write.
        try remountCopyingWholeFiles()
        run(["cp", m + "/Documents/big", m + "/Documents/clone"])
        XCTAssertEqual(numberAttr(m, "clone_savings"), UInt64(Self.big), "no linked clone was made")
        // The shared data leaves the page cache, so the break's copy must read the disk.
        let backing = open(container + "/Documents/big", O_RDONLY)
        XCTAssertGreaterThanOrEqual(backing, 0)
        XCTAssertEqual(fsync(backing), 0)
        XCTAssertEqual(posix_fadvise(backing, 0, 0, Int32(POSIX_FADV_DONTNEED)), 0)
        close(backing)
        let clone = m + "/Documents/clone"
        try assertUnrelatedOpenCompletes(while: {
            let descriptor = open(clone, O_WRONLY)
            guard descriptor >= 0 else { return -Int(errno) }
            defer { close(descriptor) }
            return pwrite(descriptor, "x", 1, 4096)
        }, { call, _ in call.first == "326" })  // copy_file_range
        let original = try Data(contentsOf: URL(fileURLWithPath: container + "/Documents/big"))
        XCTAssertEqual(original.count, Self.big)
        var expected = original
        expected[4096] = UInt8(ascii: "x")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: clone)), expected)
    }
}

/// Reflinks (XFS): a member's write re-reads its extents with a flush
/// (`FIEMAP_FLAG_SYNC`) after syncing the registry's journal.
final class ReflinkIsolationTests: ReflinkTestCase, UnrelatedFileScenario {
    override var throughPausableStore: Bool { true }
    override func prepareContainer() throws { try prepareFiles() }

    func testUnrelatedOpenDoesNotWaitForAMembersFlush() throws {
        run(["cp", m + "/Documents/big", m + "/Documents/clone"])
        XCTAssertEqual(ReflinkTestCase.fiemap(container + "/Documents/clone").1, true, "no reflink clone was made")
        // A third member, for the rehearsal: a write to it leaves `big` and
        // `clone` alike, so the held write still appends to the journal.
        run(["cp", m + "/Documents/big", m + "/Documents/spare"])
        let clone = m + "/Documents/clone"
        // A whole page: the write itself needs no read of the held image.
        let page = [UInt8](repeating: UInt8(ascii: "x"), count: 4096)
        try assertUnrelatedOpenCompletes(rehearse: {
            overwrite(m + "/Documents/spare", at: 4096, page)
        }, while: {
            let descriptor = open(clone, O_WRONLY)
            guard descriptor >= 0 else { return -Int(errno) }
            defer { close(descriptor) }
            return pwrite(descriptor, page, 4096, 4096) == 4096 ? 1 : -1
        }, { call, file in
            // fdatasync of the registry's journal, or FS_IOC_FIEMAP of the clone
            (call.first == "75" && file.hasSuffix("/clones.journal"))
                || (call.first == "16" && call.count > 2 && call[2] == "0xc020660b")
        })
        var expected = try Data(contentsOf: URL(fileURLWithPath: container + "/Documents/big"))
        expected.replaceSubrange(4096..<8192, with: page)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: clone)), expected)
    }
}
