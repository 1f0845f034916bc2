import XCTest
import PurgeCore

final class MountTableContainingTests: XCTestCase {
    private let table = MountTable(parsing: """
        1 0 8:1 / / rw - ext4 /dev/root rw
        36 1 98:0 / /srv/app rw - ext4 /dev/sdb rw
        50 36 0:45 / /srv/app rw - fuse.purgefs /srv/app rw
        60 50 0:46 / /srv/app/tmp/disk rw - tmpfs tmpfs rw
        70 1 0:47 / /srv/view rw - fuse.purgefs /srv/data rw
        """)

    func testDeepestMountPointWins() {
        XCTAssertEqual(table.mount(containing: "/srv/view/Documents/a")?.id, 70)
        XCTAssertEqual(table.mount(containing: "/srv/view")?.id, 70)
        XCTAssertEqual(table.mount(containing: "/srv/viewer")?.id, 1)
        XCTAssertEqual(table.mount(containing: "/")?.id, 1)
    }

    func testTopmostOfAStackWins() {
        XCTAssertEqual(table.mount(containing: "/srv/app/Documents")?.id, 50)
        XCTAssertEqual(table.mount(containing: "/srv/app")?.id, 50)
    }

    func testAMountBelowAPurgefsMountIsItsOwn() {
        XCTAssertEqual(table.mount(containing: "/srv/app/tmp/disk/x")?.fileSystemType, "tmpfs")
        XCTAssertEqual(table.mount(containing: "/srv/app/tmp")?.id, 50)
    }

    func testEmptyTable() {
        XCTAssertNil(MountTable(parsing: "").mount(containing: "/x"))
    }

    func testOverlappingContainers() {
        // 50 serves /srv/app in place; 70 serves /srv/data at /srv/view.
        XCTAssertEqual(table.purgefsMount(overlapping: "/srv/app")?.entry.id, 50)
        XCTAssertEqual(table.purgefsMount(overlapping: "/srv/app")?.overlap, .same)
        XCTAssertEqual(table.purgefsMount(overlapping: "/srv/data")?.entry.id, 70)
        XCTAssertEqual(table.purgefsMount(overlapping: "/srv/data/sub")?.overlap, .inside)
        XCTAssertEqual(table.purgefsMount(overlapping: "/srv")?.overlap, .holds)
        XCTAssertNil(table.purgefsMount(overlapping: "/srv/database"))
        XCTAssertNil(table.purgefsMount(overlapping: "/srv/view"), "a mount point is no container")
        XCTAssertNil(table.purgefsMount(overlapping: "/srv/app2"))
    }

    func testTheSameContainerComesFirst() {
        let stacked = MountTable(parsing: """
            1 0 8:1 / / rw - ext4 /dev/root rw
            50 1 0:45 / /a rw - fuse.purgefs /a rw
            51 1 0:46 / /view rw - fuse.purgefs /a/b rw
            """)
        XCTAssertEqual(stacked.purgefsMount(overlapping: "/a/b")?.entry.id, 51)
        XCTAssertEqual(stacked.purgefsMount(overlapping: "/a/b")?.overlap, .same)
        XCTAssertEqual(stacked.purgefsMount(overlapping: "/a/b/c")?.entry.id, 51, "the deepest container")
    }
}
