import Foundation
import Glibc
import XCTest

/// Lookup counts and forget: after the kernel drops its dentries and inodes
/// (it sends FORGET and BATCH_FORGET), every name resolves again to the
/// right object, open descriptors keep working, and the daemon survives to
/// unmount cleanly.
final class InodeLifecycleTests: MountedTestCase {
    /// Makes the kernel forget unused FUSE inodes (system-wide, harmless).
    func dropKernelCaches() throws {
        sync()
        let fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SubprocessError("open drop_caches: \(Errno.name(errno))") }
        defer { close(fd) }
        guard write(fd, "2\n", 2) == 2 else { throw SubprocessError("write drop_caches: \(Errno.name(errno))") }
    }

    func testNamesResolveAfterTheKernelForgets() throws {
        let m = fixture.mountpoint
        let count = 1500
        XCTAssertEqual(mkdir(m + "/many", 0o755), 0)
        for i in 0..<count {
            try "file \(i)\n".write(toFile: "\(m)/many/f\(i)", atomically: false, encoding: .utf8)
        }
        XCTAssertEqual(link(m + "/many/f1", m + "/many/hard1"), 0)
        let held = open(m + "/many/f7", O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(held, 0)
        defer { close(held) }
        var inodes: [String: ino_t] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: m + "/many") {
            var st = stat()
            XCTAssertEqual(lstat("\(m)/many/\(name)", &st), 0)
            inodes[name] = st.st_ino
        }
        XCTAssertEqual(inodes.count, count + 1)

        for round in 0..<3 {
            try dropKernelCaches()
            XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: m + "/many").count, count + 1, "round \(round)")
            for i in stride(from: round, to: count, by: 7) {
                XCTAssertEqual(try String(contentsOfFile: "\(m)/many/f\(i)", encoding: .utf8), "file \(i)\n", "round \(round)")
                var st = stat()
                XCTAssertEqual(lstat("\(m)/many/f\(i)", &st), 0)
                XCTAssertEqual(st.st_ino, inodes["f\(i)"], "inode number of f\(i) is stable across forget")
            }
            var a = stat(), b = stat()
            XCTAssertEqual(lstat(m + "/many/f1", &a), 0)
            XCTAssertEqual(lstat(m + "/many/hard1", &b), 0)
            XCTAssertEqual(a.st_ino, b.st_ino)
            XCTAssertEqual(a.st_nlink, 2)
            var buffer = [UInt8](repeating: 0, count: 32)
            XCTAssertEqual(pread(held, &buffer, 32, 0), 7, "the held descriptor still reads")
        }

        // Replace names while their old inodes are forgotten.
        for i in 0..<100 {
            XCTAssertEqual(unlink("\(m)/many/f\(i)"), 0)
            try "new \(i)\n".write(toFile: "\(m)/many/f\(i)", atomically: false, encoding: .utf8)
        }
        try dropKernelCaches()
        for i in 0..<100 {
            XCTAssertEqual(try String(contentsOfFile: "\(m)/many/f\(i)", encoding: .utf8), "new \(i)\n")
        }
        XCTAssertEqual(rename(m + "/many", m + "/renamed"), 0)
        try dropKernelCaches()
        XCTAssertEqual(try String(contentsOfFile: m + "/renamed/f500", encoding: .utf8), "file 500\n")
        XCTAssertEqual(try String(contentsOfFile: fixture.container + "/renamed/f50", encoding: .utf8), "new 50\n")
        XCTAssertTrue(fixture.daemonPID.map { kill($0, 0) == 0 } ?? false, "the daemon is alive")
    }

    /// Across mounts, rename and link are EXDEV.
    func testRenameAndLinkAcrossMountsAreEXDEV() throws {
        let inside = fixture.mountpoint + "/f"
        try "x".write(toFile: inside, atomically: false, encoding: .utf8)
        let outside = fixture.base + "/outside"
        XCTAssertEqual(rename(inside, outside), -1)
        XCTAssertEqual(errno, EXDEV)
        XCTAssertEqual(link(inside, outside), -1)
        XCTAssertEqual(errno, EXDEV)
        try "y".write(toFile: outside, atomically: false, encoding: .utf8)
        XCTAssertEqual(rename(outside, fixture.mountpoint + "/g"), -1)
        XCTAssertEqual(errno, EXDEV)
        XCTAssertEqual(try String(contentsOfFile: fixture.container + "/f", encoding: .utf8), "x")
    }
}
