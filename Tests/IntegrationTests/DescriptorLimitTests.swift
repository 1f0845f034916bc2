import Foundation
import Glibc
import XCTest

/// The kernel may hold more inodes than the daemon may hold descriptors:
/// with a low open-files limit, a directory with more entries than the limit
/// still lists in full, every entry can be stat'ed, read, written and renamed.
final class DescriptorLimitTests: MountedTestCase {
    override var mountsInSetUp: Bool { false }
    static let entries = 3_000

    override func prepareContainer() throws {
        let directory = fixture.container + "/many"
        XCTAssertEqual(mkdir(directory, 0o755), 0)
        for index in 0..<Self.entries {
            XCTAssertTrue(FileManager.default.createFile(atPath: "\(directory)/f\(index)", contents: Data("\(index)".utf8)))
        }
    }

    func testMoreEntriesThanDescriptors() throws {
        try fixture.mount(launcher: ["prlimit", "--nofile=512:512", "--"])
        let directory = fixture.mountpoint + "/many"
        let names = try FileManager.default.contentsOfDirectory(atPath: directory)
        XCTAssertEqual(names.count, Self.entries)
        var failures = 0
        for name in names {
            var status = stat()
            if lstat(directory + "/" + name, &status) != 0 { failures += 1 }
        }
        XCTAssertEqual(failures, 0, "lstat failed for \(failures) entries")
        // Entries seen long ago (their descriptors evicted since) still work.
        XCTAssertEqual(try String(contentsOfFile: directory + "/f0", encoding: .utf8), "0")
        XCTAssertTrue(FileManager.default.createFile(atPath: directory + "/f1", contents: Data("one".utf8)))
        XCTAssertEqual(try String(contentsOfFile: fixture.container + "/many/f1", encoding: .utf8), "one")
        XCTAssertEqual(rename(directory + "/f2", directory + "/f2-renamed"), 0)
        XCTAssertEqual(try String(contentsOfFile: directory + "/f2-renamed", encoding: .utf8), "2")
        XCTAssertEqual(chmod(directory + "/f3", 0o600), 0)
        var status = stat()
        XCTAssertEqual(lstat(fixture.container + "/many/f3", &status), 0)
        XCTAssertEqual(status.st_mode & 0o777, 0o600)
    }

    /// An open file costs the daemon one descriptor, not two (its open
    /// descriptor stands for its inode's): with a limit of 512, one process
    /// holds 400 files open and every other open still works. Before, the
    /// daemon used two descriptors per open file and answered EMFILE from
    /// about the 250th on, to every process. Running out at last is said
    /// once in the daemon log.
    func testOpenFilesCostOneDescriptorEach() throws {
        try fixture.mount(launcher: ["prlimit", "--nofile=512:512", "--"])
        let directory = fixture.mountpoint + "/many"
        var held: [Int32] = []
        defer { for descriptor in held { close(descriptor) } }
        for index in 0..<400 {
            let descriptor = open("\(directory)/f\(index)", index.isMultiple(of: 2) ? O_RDONLY : O_RDWR)
            XCTAssertGreaterThanOrEqual(descriptor, 0, "open of f\(index) while \(held.count) are held: errno \(errno)")
            guard descriptor >= 0 else { return }
            held.append(descriptor)
        }
        // Another process's opens, a create, a write and read back.
        let other = try Subprocess.run(["/bin/sh", "-c", "cat '\(directory)/f2999' && echo new > '\(directory)/made' && cat '\(directory)/made'"])
        XCTAssertEqual(other.status, 0, other.stderr)
        XCTAssertEqual(other.stdout, "2999new\n")
        // Held files still read and write through their descriptors.
        var buffer = [UInt8](repeating: 0, count: 8)
        XCTAssertEqual(pread(held[10], &buffer, 8, 0), 2)
        XCTAssertEqual(String(decoding: buffer.prefix(2), as: UTF8.self), "10")
        XCTAssertEqual(pwrite(held[11], "eleven", 6, 0), 6)
        XCTAssertEqual(try String(contentsOfFile: fixture.container + "/many/f11", encoding: .utf8), "eleven")
        // An unlinked open file keeps working and is gone once closed.
        XCTAssertEqual(unlink("\(directory)/f12"), 0)
        XCTAssertEqual(pread(held[12], &buffer, 8, 0), 2)
        var status = stat()
        XCTAssertEqual(fstat(held[12], &status), 0)
        XCTAssertEqual(status.st_nlink, 0)
        if let pid = fixture.daemonPID {
            let count = openDescriptors(of: pid).count
            XCTAssertLessThan(count, 512 - 40, "the daemon holds \(count) descriptors for 400 open files")
        }
        XCTAssertFalse(fixture.daemonStderrText().contains("out of file descriptors"))

        // Past the limit: EMFILE, said once in the log.
        var refused = 0
        for index in 400..<700 where refused < 20 {
            let descriptor = open("\(directory)/f\(index)", O_RDONLY)
            if descriptor >= 0 { held.append(descriptor) } else { XCTAssertEqual(errno, EMFILE); refused += 1 }
        }
        XCTAssertEqual(refused, 20, "the daemon's limit of 512 was never reached")
        let log = fixture.daemonStderrText()
        XCTAssertEqual(log.components(separatedBy: "out of file descriptors").count - 1, 1, log)
        // Closing files makes room again, once the daemon has their
        // releases: the kernel sends RELEASE after close(2) returns, in the
        // background, so an open right after may still find the daemon full.
        for descriptor in held.suffix(100) { close(descriptor) }
        held.removeLast(100)
        XCTAssertTrue(eventually(timeout: 10) { (try? String(contentsOfFile: directory + "/f2998", encoding: .utf8)) == "2998" },
                      "f2998 still unreadable 10 s after 100 files were closed")
    }
}
