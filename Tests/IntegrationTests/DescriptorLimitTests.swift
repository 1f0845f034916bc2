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
}
