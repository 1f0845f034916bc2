import Glibc
import PurgeSys
import XCTest

final class PathsExtendedAttributesTests: XCTestCase {
    func testSetThenReadBackFollowingSymlinks() throws {
        let directory = try TemporaryDirectory()
        try FileDescriptor.open("f", in: directory.descriptor, flags: O_WRONLY | O_CREAT, mode: 0o644).close()
        try directory.descriptor.makeSymbolicLink("link", target: "f")
        let file = directory.path + "/f"
        try Paths.setExtendedAttribute("user.test", of: file, to: Array("12345".utf8))
        XCTAssertEqual(try Paths.extendedAttribute("user.test", of: file), Array("12345".utf8))
        XCTAssertEqual(try Paths.extendedAttribute("user.test", of: directory.path + "/link"), Array("12345".utf8))
        try Paths.setExtendedAttribute("user.test", of: directory.path + "/link", to: [])
        XCTAssertEqual(try Paths.extendedAttribute("user.test", of: file), [])
    }

    func testLargeValueIsReadWhole() throws {
        let directory = try TemporaryDirectory()
        let value = (0..<3000).map { UInt8($0 % 251) }
        try Paths.setExtendedAttribute("user.big", of: directory.path, to: value)
        XCTAssertEqual(try Paths.extendedAttribute("user.big", of: directory.path), value)
    }

    func testErrors() throws {
        let directory = try TemporaryDirectory()
        XCTAssertThrowsError(try Paths.extendedAttribute("user.absent", of: directory.path)) {
            XCTAssertEqual($0 as? Errno, .noData)
        }
        XCTAssertThrowsError(try Paths.extendedAttribute("user.x", of: directory.path + "/missing")) {
            XCTAssertEqual($0 as? Errno, .noEntry)
        }
        XCTAssertThrowsError(try Paths.setExtendedAttribute("user.x", of: directory.path + "/missing", to: [1])) {
            XCTAssertEqual($0 as? Errno, .noEntry)
        }
        XCTAssertThrowsError(try Paths.setExtendedAttribute("bogus.x", of: directory.path, to: [1])) {
            XCTAssertEqual($0 as? Errno, .notSupported)
        }
    }
}
