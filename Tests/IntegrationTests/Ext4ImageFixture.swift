import Foundation
import Glibc
import XCTest

/// A mount whose container is on an ext4 image, made by the test on a loop
/// device: no reflinks, so purgefs's clones there share whole files (hard
/// links kept private to purgefs) until one of them is modified.
class Ext4ImageTestCase: LoopImageTestCase {
    override var kind: ImageKind { .ext4 }

    /// `allocated` is what `du --block-size=1` says of the container's
    /// regular files (the state directory aside): du counts a file with
    /// several links once, which is how clones share data on ext4.
    /// `clone_savings` is what counting every name on its own would add.
    override func walkFigures() -> (allocated: UInt64, savings: UInt64) {
        let listing = "find '\(container)' -path '\(container)/.purgefs' -prune -o -type f -print0"
        let du = try? Subprocess.run(["sh", "-c", listing + " | du --files0-from=- --block-size=1 -c | tail -n 1"], timeout: 60)
        guard let du, du.status == 0, let total = du.stdout.split(separator: "\t").first.flatMap({ UInt64($0) }) else {
            XCTFail("du of \(container) failed: \(String(describing: du))")
            return (0, 0)
        }
        let everyName = BackingWalk(container).files.values.reduce(UInt64(0)) { $0 + $1.allocated * UInt64($1.names.count) }
        // Data sparse clones share that no name in the container holds any
        // more is kept by a link in the state directory: stored once, and
        // taken from what they save.
        return (total + unnamedBaseAllocation(), everyName - total + sparseSavings())
    }

    /// The allocation of the bases (`clone-anchors/b<ino>`) that are their only link.
    func unnamedBaseAllocation() -> UInt64 {
        let anchors = container + "/.purgefs/clone-anchors"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: anchors)) ?? []
        return names.filter { $0.hasPrefix("b") }.reduce(UInt64(0)) { total, name in
            var st = stat()
            guard lstat(anchors + "/" + name, &st) == 0, st.st_nlink == 1 else { return total }
            return total + UInt64(st.st_blocks) * 512
        }
    }

    // MARK: Block sharing (on unless the daemon runs with PURGEFS_BLOCK_SHARING=0)

    /// The daemons this test starts make linked clones sparse at their first write.
    var sharesBlocks: Bool {
        (daemonEnvironment["PURGEFS_BLOCK_SHARING"] ?? getenv("PURGEFS_BLOCK_SHARING").map { String(cString: $0) }) != "0"
    }

    /// Remounts (with `options`) a daemon that copies a linked clone whole
    /// at its first write: for the tests of that copy (what purgefs does
    /// with block sharing off), which block sharing never makes.
    func remountCopyingWholeFiles(options: [String] = []) throws {
        XCTAssertEqual(unmountPurgefs(), [])
        daemonEnvironment["PURGEFS_BLOCK_SHARING"] = "0"
        try mountPurgefs(options: options)
    }

    /// A linked clone written since it was made shares the blocks it did
    /// not write (docs/DESIGN.md, "Block sharing without reflinks"): only
    /// with block sharing on, the mount says it is not flat, its backing
    /// file is its own (the mount shows its inode number: a clone that
    /// shares a whole file shows its anchor's, and the file's holes are no
    /// data it shares), and in the backing directory its shared blocks are
    /// holes (the files these tests clone have none of their own; an
    /// original with holes of its own, as `HangTests`' load writes them, is
    /// told apart by `sparseShared`).
    func isSparseClone(_ name: String) -> Bool {
        var shown = stat()
        guard sharesBlocks, stat(m + "/" + name, &shown) == 0 else { return false }
        let fd = open(container + "/" + name, O_RDONLY | O_NOFOLLOW)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG, st.st_size > 0, st.st_ino == shown.st_ino else { return false }
        let hole = lseek(fd, 0, 4)  // SEEK_HOLE (not in Glibc's Swift module)
        return hole >= 0 && hole < st.st_size && getAttr(m + "/" + name, pf("flat")) == .value("0")
    }

    /// What a sparse clone saves: its 64 KiB blocks below its size that are
    /// holes in the backing directory and data through the mount (they read
    /// from the data it shares; a hole of its own is a hole on both sides:
    /// past a truncation that lowered what it shares and then grew it, or
    /// in a linked clone's original written at scattered offsets, which the
    /// mount also calls not flat); 0 for any other file.
    func sparseShared(_ name: String) -> UInt64 {
        guard isSparseClone(name) else { return 0 }
        let fd = open(container + "/" + name, O_RDONLY)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        let shown = open(m + "/" + name, O_RDONLY)
        guard shown >= 0 else { return 0 }
        defer { close(shown) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return 0 }
        let block: off_t = 64 << 10
        var holes: UInt64 = 0
        var start: off_t = 0
        while start + block <= st.st_size {
            let data = lseek(fd, start, 3)  // SEEK_DATA (not in Glibc's Swift module)
            if (data < 0 || data >= start + block) && lseek(shown, start, 3) == start { holes += UInt64(block) }
            start += block
        }
        return holes
    }

    /// What the sparse clones in the container save (0 without block
    /// sharing): what they share, less the data no other name holds (kept
    /// for them in the state directory).
    func sparseSavings() -> UInt64 {
        let shared = BackingWalk(container).files.values.reduce(UInt64(0)) { total, file in
            total + sparseShared(file.names[0])
        }
        return shared - min(shared, unnamedBaseAllocation())
    }
}

// MARK: Helpers for linked clones
// (LinkedCloneTests, LinkedCloneSafetyTests)

extension Ext4ImageTestCase {
    /// A file's bytes, read through the mount (`name` is relative to it).
    func contents(_ name: String) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: m + "/" + name))
    }

    func contentID(_ name: String) -> XattrOutcome {
        getAttr(m + "/" + name, pf("content_id"))
    }

    /// Asserts that `name` reads `expected` through the mount and in the backing directory.
    func assertReads(_ name: String, _ expected: Data, _ label: String, file: StaticString = #filePath, line: UInt = #line) {
        // A sparse clone's backing file has holes where it shares: it reads right only through the mount.
        let places = [("mount", m + "/" + name)] + (isSparseClone(name) ? [] : [("backing directory", container + "/" + name)])
        for (place, path) in places {
            let read = compareFile(path, with: expected)
            XCTAssertNotNil(read, "\(label): cannot read \(name) in the \(place)", file: file, line: line)
            if let read, let difference = read.firstDifference {
                XCTFail("\(label): \(name) in the \(place) reads \(read.count) bytes, not the \(expected.count) expected (first difference at \(difference))", file: file, line: line)
            }
        }
    }

    /// Reads `path` to its end, comparing it with `expected` as it goes, in
    /// one reused buffer (the files of the kill tests are 256 MiB: reading
    /// each into a new `Data` cost more in page faults than the reads): nil
    /// when it cannot be read, else how many bytes it holds and where it
    /// first differs from `expected` (nil when it reads exactly that).
    func compareFile(_ path: String, with expected: Data) -> (count: Int, firstDifference: Int?)? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var count = 0
        var difference: Int?
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if n == 0 { break }
            if difference == nil {
                let overlap = max(0, min(n, expected.count - count))
                let same = overlap == 0 || expected.withUnsafeBytes { all in
                    buffer.withUnsafeBytes { memcmp(all.baseAddress! + count, $0.baseAddress!, overlap) == 0 }
                }
                if !same {
                    let start = expected.startIndex + count
                    difference = count + (0..<overlap).first { buffer[$0] != expected[start + $0] }!
                } else if overlap < n {
                    difference = count + overlap
                }
            }
            count += n
        }
        return (count, difference ?? (count < expected.count ? count : nil))
    }

    func firstDifference(_ a: Data, _ b: Data) -> Int {
        zip(a, b).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(a.count, b.count)
    }

    /// `data` with `bytes` written over it at `offset`.
    func patched<D: DataProtocol>(_ data: D, at offset: Int, _ bytes: [UInt8]) -> Data {
        var result = Data(data)
        result.replaceSubrange(offset..<offset + bytes.count, with: bytes)
        return result
    }

    func status(_ path: String) throws -> stat {
        var st = stat()
        guard stat(path, &st) == 0 else { throw SubprocessError("stat \(path): \(Errno.name(errno))") }
        return st
    }

    /// Every byte from offset 0 to the end, through `fd`.
    func readAll(_ fd: Int32) -> Data? {
        var result = Data()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(result.count)) }
            if n < 0 { return nil }
            if n == 0 { return result }
            result.append(contentsOf: buffer[..<n])
        }
    }

    /// Opens `path` for writing and writes `bytes` at `offset`: 0, or the
    /// first errno of open, pwrite and close (a short write reports EIO).
    func tryOverwrite(_ path: String, at offset: Int64, _ bytes: [UInt8]) -> Int32 {
        let fd = open(path, O_WRONLY)
        guard fd >= 0 else { return errno }
        let written = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, bytes.count, off_t(offset)) }
        let writeError = written < 0 ? errno : (written == bytes.count ? 0 : EIO)
        let closeError = close(fd) == 0 ? 0 : errno
        return writeError != 0 ? writeError : closeError
    }

    /// `kill -9` of the daemon serving this mount, then the dead mount is
    /// cleaned (unmounted) so that `mountPurgefs` can mount again, once
    /// `users` (processes with files open on the mount) have exited.
    func killPurgefs(users: [Process] = [], file: StaticString = #filePath, line: UInt = #line) {
        let daemons = fixture.ownProcesses()
        XCTAssertFalse(daemons.isEmpty, "no purgefs daemon to kill", file: file, line: line)
        for pid in daemons { kill(pid, SIGKILL) }
        for user in users {
            XCTAssertTrue(Subprocess.wait(user, timeout: 30), "\(user.arguments ?? []) hangs after the daemon died", file: file, line: line)
        }
        XCTAssertEqual(unmountPurgefs(), [], "cleaning the dead mount after kill -9", file: file, line: line)
    }
}
