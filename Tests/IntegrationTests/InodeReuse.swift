import Glibc
import XCTest

/// Deletes `old` and makes `new` in `root` with the old entry's inode
/// number, as ext4 does when nothing else takes it first: ext4 gives the
/// lowest free number of the group, so entries are made beside `new` (and
/// removed after) until one gets it, and that one is renamed to `new`.
/// A file is made with 20,000 bytes.
func replaceReusingInode(_ root: String, _ old: String, with new: String, directory: Bool,
                         file: StaticString = #filePath, line: UInt = #line) {
    var before = stat()
    XCTAssertEqual(stat(root + "/" + old, &before), 0, file: file, line: line)
    XCTAssertEqual(directory ? rmdir(root + "/" + old) : unlink(root + "/" + old), 0, file: file, line: line)
    var fillers: [String] = []
    defer { for filler in fillers { _ = directory ? rmdir(filler) : unlink(filler) } }
    // ext4 gives a new entry the lowest free number of the group it picks
    // (for a directory, the parent's while that group has room): numbers
    // freed below the old one are each taken before it. The callers' fresh
    // images (`ScratchExt4`) hold few; a long-used host disk held thousands,
    // and its directories went to other groups.
    for index in 0..<20_000 {
        let candidate = root + "/" + new + ".\(index)"
        if directory {
            XCTAssertEqual(mkdir(candidate, 0o755), 0, file: file, line: line)
        } else {
            XCTAssertEqual(writeBytes(candidate, tiled(20_000, seed: 41)), 0, file: file, line: line)
        }
        var made = stat()
        XCTAssertEqual(stat(candidate, &made), 0, file: file, line: line)
        if made.st_ino == before.st_ino {
            XCTAssertEqual(rename(candidate, root + "/" + new), 0, file: file, line: line)
            return
        }
        fillers.append(candidate)
    }
    XCTFail("no new entry got the inode number of \(old) (the test needs a filesystem that reuses them, as ext4 does)",
            file: file, line: line)
}
