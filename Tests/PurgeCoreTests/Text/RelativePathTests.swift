import XCTest
import PurgeCore

final class RelativePathTests: XCTestCase {
    func testNormalises() throws {
        XCTAssertEqual(try RelativePath.normalise("./a//b/"), "a/b")
        XCTAssertEqual(try RelativePath.normalise("Library/Caches"), "Library/Caches")
        XCTAssertEqual(try RelativePath.normalise("a/./b/."), "a/b")
    }

    func testRefusals() {
        let cases: [(String, RelativePathProblem)] = [
            ("", .empty), ("/tmp", .absolute), ("..", .parentReference), ("a/../b", .parentReference),
            ("a/..", .parentReference), (".", .containerItself), ("./", .containerItself), ("//", .absolute),
        ]
        for (path, problem) in cases {
            XCTAssertThrowsError(try RelativePath.normalise(path)) { error in
                XCTAssertEqual(error as? RelativePathProblem, problem, "for '\(path)'")
            }
        }
    }

    func testContainment() {
        XCTAssertTrue(RelativePath.isSameOrInside("a/b", "a"))
        XCTAssertTrue(RelativePath.isSameOrInside("a", "a"))
        XCTAssertFalse(RelativePath.isSameOrInside("ab", "a"))
        XCTAssertFalse(RelativePath.isSameOrInside("a", "a/b"))
    }

    func testAbsolutePaths() {
        XCTAssertEqual(AbsolutePath.normalise("/a//b/./c/../d/"), "/a/b/d")
        XCTAssertEqual(AbsolutePath.normalise("/../x"), "/x")
        XCTAssertEqual(AbsolutePath.normalise("/"), "/")
        XCTAssertNil(AbsolutePath.normalise("a/b"))
        XCTAssertEqual(AbsolutePath.relative("/srv/app/x", to: "/srv/app"), "x")
        XCTAssertEqual(AbsolutePath.relative("/srv/app", to: "/srv/app"), "")
        XCTAssertNil(AbsolutePath.relative("/srv/apple", to: "/srv/app"))
        XCTAssertEqual(AbsolutePath.relative("/srv", to: "/"), "srv")
    }
}
