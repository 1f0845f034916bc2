internal import CLinux
import Foundation
import Glibc
import PurgeCore
import XCTest

/// A mount whose container is the root of an XFS image with reflinks, made
/// by the test itself on a loop device: `truncate`, `mkfs.xfs -m reflink=1`,
/// `losetup`, `mount`. Skipped with a message where that cannot be made.
/// Teardown unmounts purgefs, then the XFS filesystem, then detaches the loop device.
class ReflinkTestCase: XCTestCase {
    var fixture: MountFixture!
    private var loopDevice: String?
    private var xfsMounted = false
    /// Where the XFS image is mounted, and the container inside it.
    var xfs: String { fixture.base + "/xfs" }
    var container: String { xfs + "/container" }
    var m: String { fixture.mountpoint }

    override func setUpWithError() throws {
        try super.setUpWithError()
        let fixture = try MountFixture()
        self.fixture = fixture
        addTeardownBlock { [self] in
            for problem in unmountPurgefs() { XCTFail("teardown: \(problem)") }
            if xfsMounted, (try? Subprocess.run(["umount", xfs], timeout: 30))?.status != 0 {
                XCTFail("teardown: cannot unmount the XFS image at \(xfs)")
            }
            if let loopDevice, (try? Subprocess.run(["losetup", "-d", loopDevice], timeout: 30))?.status != 0 {
                XCTFail("teardown: cannot detach \(loopDevice)")
            }
            for problem in fixture.destroy() { XCTFail("teardown: \(problem)") }
        }
        guard access("/sbin/mkfs.xfs", X_OK) == 0 || access("/usr/sbin/mkfs.xfs", X_OK) == 0 else {
            throw XCTSkip("mkfs.xfs is not installed (scripts/bootstrap installs xfsprogs): reflink tests skipped")
        }
        let image = fixture.base + "/xfs.img"
        let made = try Subprocess.run(["sh", "-c", "truncate -s 512M '\(image)' && mkfs.xfs -q -m reflink=1 '\(image)'"], timeout: 60)
        guard made.status == 0 else { throw XCTSkip("cannot make an XFS image with reflinks: \(made)") }
        let attached = try Subprocess.run(["losetup", "-f", "--show", image], timeout: 30)
        guard attached.status == 0 else { throw XCTSkip("no loop device for the XFS image: \(attached)") }
        loopDevice = attached.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(mkdir(xfs, 0o755), 0)
        let mounted = try Subprocess.run(["mount", loopDevice!, xfs], timeout: 30)
        guard mounted.status == 0 else { throw XCTSkip("cannot mount the XFS image: \(mounted)") }
        xfsMounted = true
        XCTAssertEqual(mkdir(container, 0o755), 0)
        try prepareContainer()
        try mountPurgefs()
    }

    func prepareContainer() throws {}

    /// `purgefs mount CONTAINER MOUNTPOINT`, which returns once the mount is usable.
    func mountPurgefs(options: [String] = []) throws {
        let result = try Subprocess.run([fixture.binary, "mount", container, m] + (options.isEmpty ? [] : ["-o", options.joined(separator: ",")]), timeout: 30)
        guard result.status == 0, MountTable.mounts(at: m).last?.fileSystemType == "fuse.purgefs" else {
            throw SubprocessError("mount of \(container) on \(m) failed: \(result)")
        }
    }

    /// Unmounts the purgefs mount (only it) and waits for its daemon to exit.
    @discardableResult
    func unmountPurgefs() -> [String] {
        var problems: [String] = []
        if MountTable.isMounted(m), (try? Subprocess.run(["fusermount3", "-u", m], timeout: 15))?.status != 0 {
            problems.append("fusermount3 -u \(m) failed")
        }
        if !eventually(timeout: 10, { fixture.ownProcesses().isEmpty }) {
            problems.append("purgefs daemons \(fixture.ownProcesses()) outlived the unmount")
        }
        return problems
    }

    // MARK: Helpers

    /// Free bytes of the backing (XFS) filesystem.
    func backingFree() -> UInt64 {
        var status = statvfs()
        XCTAssertEqual(statvfs(container, &status), 0)
        return UInt64(status.f_bfree) * UInt64(status.f_frsize)
    }

    /// Writes `count` pseudo-random bytes to `path` (a new file).
    func writeRandom(_ path: String, count: Int, seed: UInt64 = 1) throws {
        var state = seed
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { raw in
            let words = raw.bindMemory(to: UInt64.self)
            for i in 0..<words.count {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                words[i] = state
            }
        }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    func run(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) {
        let result = try? Subprocess.run(arguments, timeout: 60)
        XCTAssertEqual(result?.status, 0, "\(arguments.joined(separator: " ")): \(String(describing: result))", file: file, line: line)
    }

    func sameContent(_ a: String, _ b: String) -> Bool {
        FileManager.default.contentsEqual(atPath: a, andPath: b)
    }

    /// Writes `bytes` at `offset` of `path` through a descriptor.
    func overwrite(_ path: String, at offset: Int64, _ bytes: [UInt8]) {
        let fd = open(path, O_WRONLY)
        XCTAssertGreaterThanOrEqual(fd, 0, "open \(path)")
        XCTAssertEqual(bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, bytes.count, off_t(offset)) }, bytes.count)
        close(fd)
    }

    /// `allocated` and `clone_savings` of the backing container by an
    /// independent walk: files with shared extents are charged the union of
    /// their physical extents (each byte once), the others their blocks.
    func walkFigures() -> (allocated: UInt64, savings: UInt64) {
        var union: [(UInt64, UInt64)] = []
        var held: UInt64 = 0
        var plain: UInt64 = 0
        let root = container
        let enumerator = FileManager.default.enumerator(atPath: root)!
        while let name = enumerator.nextObject() as? String {
            if name == ".purgefs" { enumerator.skipDescendants(); continue }
            let path = root + "/" + name
            var st = stat()
            guard lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { continue }
            let (extents, shared) = Self.fiemap(path)
            if shared {
                for (start, length) in extents { union.append((start, start + length)); held += length }
            } else {
                plain += UInt64(st.st_blocks) * 512
            }
        }
        union.sort { $0.0 < $1.0 }
        var total: UInt64 = 0
        var end: UInt64 = 0
        for (start, stop) in union {
            if stop <= end { continue }
            total += stop - max(start, end)
            end = stop
        }
        return (plain + total, held - total)
    }

    /// Physical extents of a file, and whether any is shared.
    static func fiemap(_ path: String) -> ([(UInt64, UInt64)], Bool) {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return ([], false) }
        defer { close(fd) }
        var out = [clinux_extent](repeating: clinux_extent(), count: 4096)
        let n = out.withUnsafeMutableBufferPointer { clinux_fiemap(fd, 0, 1, $0.baseAddress, UInt32($0.count)) }
        guard n > 0 else { return ([], false) }
        let extents = out[..<Int(n)]
        return (extents.map { ($0.physical, $0.length) }, extents.contains { $0.flags & clinux_FIEMAP_EXTENT_SHARED != 0 })
    }

    func assertAccounting(_ label: String, file: StaticString = #filePath, line: UInt = #line) {
        let walk = walkFigures()
        XCTAssertEqual(numberAttr(fixture.mountpoint, "allocated"), walk.allocated, "\(label): allocated vs the walk", file: file, line: line)
        XCTAssertEqual(numberAttr(fixture.mountpoint, "clone_savings"), walk.savings, "\(label): clone_savings vs the walk", file: file, line: line)
    }
}

/// copy_file_range(2) for the tests.
func clinuxCopy(_ source: Int32, _ inOffset: inout Int64, _ destination: Int32, _ outOffset: inout Int64, _ length: Int) -> Int {
    clinux_copy_file_range(source, &inOffset, destination, &outOffset, length, 0)
}
