import Foundation
import Glibc
import PurgeSys
import XCTest

/// `purgefs log` where the state directory is covered: an in-place mount,
/// and the same container once unmounted.
final class LogCommandTests: PurgefsCommandTestCase {
    override var mountsInSetUp: Bool { false }

    func testInPlaceMountThenUnmountedContainer() throws {
        let container = fixture.container
        try fixture.mount(options: mountOptions, inPlace: true)
        XCTAssertFalse(exists(container + "/.purgefs"), "the mount covers its state directory")
        XCTAssertEqual(try succeed("log", container), "Nothing has been purged yet.\n")

        try succeed("purge", container, "--all")
        let mounted = try succeed("log", container, "--json")
        XCTAssertEqual(mounted.split(separator: "\n").count, Self.purgeablePaths.count, mounted)
        for line in mounted.split(separator: "\n") { _ = try object(String(line)) }
        let mountedTable = try succeed("log", container)
        XCTAssertTrue(mountedTable.contains("5 files purged"), mountedTable)

        XCTAssertEqual(fixture.unmount(), [])
        XCTAssertTrue(exists(container + "/.purgefs/purge.log"))
        XCTAssertEqual(try succeed("log", container, "--json"), mounted, "the same log, read from the container itself")
        XCTAssertTrue(try succeed("log", container).contains("5 files purged"))
    }

    func testUnmountedContainerWithoutLog() throws {
        try assertRejected(["log", fixture.container], status: 1, mentioning: ["neither a purgefs mount nor a container"])
        XCTAssertEqual(mkdir(fixture.container + "/.purgefs", 0o755), 0)
        XCTAssertEqual(try succeed("log", fixture.container), "Nothing has been purged yet.\n")
    }

    func testLogOfAMountInsideItIsRefused() throws {
        try fixture.mount(options: mountOptions)
        try assertRejected(["log", mnt + "/caches"], status: 1, mentioning: ["give the mount point"])
    }
}
