import Glibc
import PurgeSys
import XCTest

final class TreeWalkTests: XCTestCase {
    func testVisitsEveryEntryOnceAndNeverFollowsSymlinks() throws {
        let directory = try TemporaryDirectory()
        let outside = try TemporaryDirectory()
        try outside.descriptor.makeDirectory("secret", mode: 0o755)
        try directory.descriptor.makeDirectory("a", mode: 0o755)
        let a = try FileDescriptor.open("a", in: directory.descriptor, flags: O_RDONLY | O_DIRECTORY)
        defer { a.closeQuietly() }
        try a.makeDirectory("b", mode: 0o755)
        try FileDescriptor.open("f", in: a, flags: O_WRONLY | O_CREAT, mode: 0o644).close()
        try a.makeSymbolicLink("escape", target: outside.path)

        var names: [String: Int] = [:]
        try TreeWalk(root: directory.descriptor).run { visit in
            names[String(cString: visit.name) + "@\(visit.depth)"] = Int(visit.status.st_mode & S_IFMT)
            return true
        }
        XCTAssertEqual(Set(names.keys), ["a@1", "b@2", "f@2", "escape@2"])
        XCTAssertEqual(names["escape@2"], Int(S_IFLNK))
    }

    func testVisitDecidesWhetherADirectoryIsEntered() throws {
        let directory = try TemporaryDirectory()
        try directory.descriptor.makeDirectory("skip", mode: 0o755)
        let skip = try FileDescriptor.open("skip", in: directory.descriptor, flags: O_RDONLY | O_DIRECTORY)
        defer { skip.closeQuietly() }
        try FileDescriptor.open("inside", in: skip, flags: O_WRONLY | O_CREAT, mode: 0o644).close()
        var seen: [String] = []
        try TreeWalk(root: directory.descriptor).run { visit in
            seen.append(String(cString: visit.name))
            return false
        }
        XCTAssertEqual(seen, ["skip"])
    }
}

final class TreeWalkRegularFilesTests: XCTestCase {
    func testRegularFilesArePathsBelowTheRootWithoutDirectoriesOrSymlinks() throws {
        let directory = try TemporaryDirectory()
        try directory.descriptor.makeDirectory("a", mode: 0o755)
        let a = try FileDescriptor.open("a", in: directory.descriptor, flags: O_RDONLY | O_DIRECTORY)
        defer { a.closeQuietly() }
        try a.makeDirectory("b", mode: 0o755)
        let b = try FileDescriptor.open("b", in: a, flags: O_RDONLY | O_DIRECTORY)
        defer { b.closeQuietly() }
        try a.makeDirectory("empty", mode: 0o755)
        try FileDescriptor.open("top", in: directory.descriptor, flags: O_WRONLY | O_CREAT, mode: 0o644).close()
        try FileDescriptor.open("f", in: a, flags: O_WRONLY | O_CREAT, mode: 0o644).close()
        try FileDescriptor.open("deep", in: b, flags: O_WRONLY | O_CREAT, mode: 0o644).close()
        try FileDescriptor.open("z", in: directory.descriptor, flags: O_WRONLY | O_CREAT, mode: 0o644).close()
        try a.makeSymbolicLink("link", target: "f")

        let found = try TreeWalk(root: directory.descriptor).regularFiles()
        XCTAssertEqual(Set(found.map(\.path)), ["top", "a/f", "a/b/deep", "z"])
        XCTAssertEqual(found.count, 4, "each file once")
        let deep = try XCTUnwrap(found.first { $0.path == "a/b/deep" })
        XCTAssertEqual(deep.status.st_ino, try b.status(of: "deep").st_ino)
    }
}
