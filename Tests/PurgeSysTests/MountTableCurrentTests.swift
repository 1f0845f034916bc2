import PurgeCore
import PurgeSys
import XCTest

final class MountTableCurrentTests: XCTestCase {
    func testTheLiveTableReads() throws {
        let table = try MountTable.current()
        XCTAssertNotNil(table.topmost(at: "/"))
        XCTAssertNotNil(table.topmost(at: "/proc"), "mountinfo itself is read from a mounted /proc")
    }
}
