import XCTest
import PurgeCore

final class MountTableTests: XCTestCase {
    private let sample = """
        22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
        36 35 98:0 /mnt1 /srv/app rw,noatime master:1 - ext4 /dev/root rw,errors=continue
        50 36 0:45 / /srv/app rw,nosuid,nodev,relatime shared:30 - fuse.purgefs /srv/app rw,user_id=0,group_id=0
        51 1 0:46 / /srv/my\\040view rw,nosuid,nodev,relatime - fuse.purgefs /srv/with\\134slash rw,user_id=0
        52 1 0:47 / /mnt/other rw - fuse.sshfs host:/ rw
        garbage line
        """

    func testParsesFieldsAndEscapes() {
        let table = MountTable(parsing: sample)
        XCTAssertEqual(table.entries.count, 5)
        XCTAssertEqual(table.entries[3], MountTable.Entry(id: 51, mountPoint: "/srv/my view", fileSystemType: "fuse.purgefs", source: #"/srv/with\slash"#,
                                                        superOptions: "rw,user_id=0", deviceMinor: 46))
        XCTAssertEqual(table.entries[0].fileSystemType, "proc")
    }

    func testOptionalFieldsBeforeTheSeparator() {
        let table = MountTable(parsing: "60 1 0:50 / /a rw shared:1 master:2 propagate_from:3 - fuse.purgefs src rw")
        XCTAssertEqual(table.entries.first?.fileSystemType, "fuse.purgefs")
        XCTAssertEqual(table.entries.first?.source, "src")
    }

    func testTopmostMountWinsForAnInPlaceMount() {
        let table = MountTable(parsing: sample)
        XCTAssertEqual(table.topmost(at: "/srv/app")?.id, 50)
        XCTAssertTrue(table.topmost(at: "/srv/app")?.isPurgefs ?? false)
        XCTAssertNil(table.topmost(at: "/srv"))
    }

    func testEnclosingPurgefsMount() {
        let table = MountTable(parsing: sample)
        XCTAssertEqual(table.purgefsMount(containing: "/srv/app/Documents")?.id, 50)
        XCTAssertEqual(table.purgefsMount(containing: "/srv/my view")?.id, 51)
        XCTAssertNil(table.purgefsMount(containing: "/srv/apple"))
        XCTAssertNil(table.purgefsMount(containing: "/mnt/other/x"))
    }

    func testFuseMountAtExactlyThePath() {
        let table = MountTable(parsing: sample)
        XCTAssertEqual(table.fuseMount(at: "/srv/app")?.id, 50, "the FUSE mount stacked on ext4")
        XCTAssertEqual(table.fuseMount(at: "/mnt/other")?.fileSystemType, "fuse.sshfs")
        XCTAssertNil(table.fuseMount(at: "/proc"))
        XCTAssertNil(table.fuseMount(at: "/srv/app/Documents"))
    }

    func testSuperOptionsAreTheLastField() {
        let table = MountTable(parsing: sample)
        XCTAssertEqual(table.topmost(at: "/srv/app")?.superOptions, "rw,user_id=0,group_id=0")
        XCTAssertEqual(table.topmost(at: "/proc")?.superOptions, "rw")
    }

    func testUnescapeDecodesOnlyThreeOctalDigits() {
        XCTAssertEqual(MountTable.unescape(#"a\040b\011c\012d\134e"#), "a b\tc\nd\\e")
        XCTAssertEqual(MountTable.unescape(#"\9x\04"#), #"\9x\04"#, "not an escape: kept as written")
        XCTAssertEqual(MountTable.unescape(#"end\040"#), "end ")
    }
}
