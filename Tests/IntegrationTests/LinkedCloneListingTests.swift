import Foundation
import Glibc
import XCTest

/// A directory listing gives a linked clone the inode number `stat` gives
/// it (issue 12, item 8): its anchor's, not the shared backing inode's,
/// whether the kernel lists with readdirplus or with plain readdir (which
/// it uses past the first buffer once it has not looked names up), so
/// `find -inum` finds the clone.
final class LinkedCloneListingTests: Ext4ImageTestCase {
    /// Enough names that a listing takes several buffers of the kernel's.
    static let clones = 150

    override func prepareContainer() throws {
        try FileManager.default.createDirectory(atPath: container + "/d", withIntermediateDirectories: true)
        try writeRandom(container + "/d/original", count: 64 << 10)
    }

    /// Every name's `d_ino`, read with readdir(3) and nothing else (no stat).
    func listedInodes(_ directory: String) -> [String: UInt64] {
        guard let stream = opendir(directory) else {
            XCTFail("opendir \(directory): \(Errno.name(errno))")
            return [:]
        }
        defer { closedir(stream) }
        var inodes: [String: UInt64] = [:]
        while let entry = readdir(stream) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { inodes[name] = UInt64(entry.pointee.d_ino) }
        }
        return inodes
    }

    func assertListingMatchesStat(_ label: String, file: StaticString = #filePath, line: UInt = #line) {
        let listed = listedInodes(m + "/d")
        XCTAssertEqual(listed.count, Self.clones + 1, "\(label): every name listed", file: file, line: line)
        var wrong: [String] = []
        for (name, inode) in listed.sorted(by: { $0.key < $1.key }) {
            let shown = inodeOf(m + "/d/" + name)
            if shown != inode { wrong.append("\(name): d_ino \(inode), st_ino \(shown.map(String.init) ?? "?")") }
        }
        XCTAssertTrue(wrong.isEmpty, "\(label): \(wrong.count) names listed with another inode number than stat gives:\n  "
                      + wrong.prefix(10).joined(separator: "\n  "), file: file, line: line)
    }

    func testListingGivesEveryCloneItsOwnInodeNumber() throws {
        for index in 0..<Self.clones {
            run(["cp", m + "/d/original", m + "/d/clone-\(String(format: "%03d", index))-with-a-longer-name"])
        }
        let first = m + "/d/clone-000-with-a-longer-name"
        XCTAssertEqual(contentID("d/original"), contentID("d/clone-000-with-a-longer-name"), "a linked clone")
        XCTAssertNotEqual(inodeOf(first), inodeOf(m + "/d/original"))
        // The kernel knows every name (it just made them).
        assertListingMatchesStat("names the kernel knows")

        // Remounted, the kernel knows none: the first buffer comes by
        // readdirplus, the others by plain readdir.
        XCTAssertEqual(unmountPurgefs(), [])
        try mountPurgefs()
        assertListingMatchesStat("after a remount")

        let inode = try XCTUnwrap(inodeOf(first))
        let found = try Subprocess.run(["find", m + "/d", "-inum", String(inode)], timeout: 60)
        XCTAssertEqual(found.stdout.split(separator: "\n").map(String.init), [first], "find -inum \(inode): \(found)")
    }
}
