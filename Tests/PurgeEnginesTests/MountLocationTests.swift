import PurgeCore
@testable import PurgeEngines
import XCTest

final class MountLocationTests: XCTestCase {
    private let table = MountTable(parsing: """
        1 0 8:1 / / rw - ext4 /dev/root rw
        50 1 0:45 / /srv/app rw - fuse.purgefs /srv/app rw
        60 50 0:46 / /srv/app/tmp/disk rw - tmpfs tmpfs rw
        """)

    func testAtInsideAndOutside() {
        let root = MountLocation(path: "/srv/app", table: table)
        XCTAssertEqual(root.mount?.id, 50)
        XCTAssertTrue(root.isMountPoint)
        XCTAssertNoThrow(try root.requireMountPoint())

        let inside = MountLocation(path: "/srv/app/caches/a", table: table)
        XCTAssertEqual(inside.relative, "caches/a")
        XCTAssertFalse(inside.isMountPoint)
        XCTAssertNoThrow(try inside.requireOnPurgefs())
        XCTAssertThrowsError(try inside.requireMountPoint()) {
            XCTAssertEqual($0 as? CommandExit, .failure("/srv/app/caches/a is inside the purgefs mount at /srv/app; give the mount point"))
        }

        for path in ["/srv", "/srv/app/tmp/disk/x"] {
            let outside = MountLocation(path: path, table: table)
            XCTAssertNil(outside.mount, path)
            XCTAssertThrowsError(try outside.requireMountPoint()) {
                XCTAssertEqual($0 as? CommandExit, .failure("\(path) is not a purgefs mount"))
            }
            XCTAssertThrowsError(try outside.requireOnPurgefs()) {
                XCTAssertEqual($0 as? CommandExit, .failure("\(path) is not inside a purgefs mount"))
            }
        }
    }

    func testMissingPathIsAFailure() {
        XCTAssertThrowsError(try MountLocation.find("/nonexistent/purgefs-test")) {
            XCTAssertEqual($0 as? CommandExit, .failure("/nonexistent/purgefs-test: No such file or directory"))
        }
    }
}
