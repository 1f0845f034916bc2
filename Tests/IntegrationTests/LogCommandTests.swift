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

    /// After a mount with `state=DIR` the commands read DIR, not an old
    /// `CONTAINER/.purgefs` (issue 12, item 6).
    func testStateKeptElsewhereIsFoundAfterUnmount() throws {
        let container = fixture.container, state = fixture.base + "/state"
        XCTAssertEqual(mkdir(container + "/.purgefs", 0o700), 0, "an old state directory, from an earlier mount")
        try fixture.mount(options: mountOptions + ["state=" + state], inPlace: true)
        try succeed("purge", container, "--all")
        let mounted = try succeed("log", container, "--json")
        XCTAssertEqual(mounted.split(separator: "\n").count, Self.purgeablePaths.count, mounted)
        XCTAssertEqual(fixture.unmount(), [])

        XCTAssertEqual(try succeed("log", container, "--json"), mounted, "CONTAINER/.purgefs says where the state went")
        XCTAssertEqual(try succeed("log", container, "--state", state, "--json"), mounted)
        XCTAssertEqual(try succeed("log", state, "--json"), mounted, "a state directory given as the path")
        let purged = try succeed("metrics", container, "--prometheus").split(separator: "\n")
            .first { $0.hasPrefix("purgefs_purged_files_total{") }
        XCTAssertEqual(purged?.split(separator: " ").last, "5", "the metrics are the state's too")
        XCTAssertTrue(try succeed("metrics", state, "--json").contains("\"purgedFileCount\": 5"))

        XCTAssertEqual(try String(contentsOfFile: container + "/.purgefs/state-pointer", encoding: .utf8), state + "\n")
        try FileManager.default.removeItem(atPath: container + "/.purgefs")
        try assertRejected(["log", container], status: 1, mentioning: ["give --state DIR"])
        try assertRejected(["log", container, "--state", fixture.base + "/nope"], status: 1, mentioning: ["nope"])
        XCTAssertEqual(try succeed("log", container, "--state", state, "--json"), mounted)

        // A mount with the default state directory takes the pointer away again.
        XCTAssertEqual(mkdir(container + "/.purgefs", 0o700), 0)
        try (state + "\n").write(toFile: container + "/.purgefs/state-pointer", atomically: false, encoding: .utf8)
        try fixture.mount(options: mountOptions)
        XCTAssertEqual(fixture.unmount(), [])
        XCTAssertFalse(exists(container + "/.purgefs/state-pointer"))
        XCTAssertEqual(try succeed("log", container), "Nothing has been purged yet.\n")
    }

    /// `purgefs log --daemon` prints `daemon.log`, also where an in-place
    /// mount covers it.
    func testDaemonLogOfAnInPlaceMount() throws {
        let container = fixture.container
        XCTAssertEqual(mkdir(container + "/.purgefs", 0o700), 0)
        let marker = "marker: written before the mount\n"
        try marker.write(toFile: container + "/.purgefs/daemon.log", atomically: false, encoding: .utf8)
        try fixture.mount(options: mountOptions, foreground: false, inPlace: true)
        XCTAssertFalse(exists(container + "/.purgefs"), "the mount covers its state directory")
        XCTAssertTrue(try succeed("log", container, "--daemon").hasPrefix(marker))
        try assertRejected(["log", container, "--daemon", "--json"], status: 64, mentioning: ["--daemon"])
        XCTAssertEqual(fixture.unmount(), [])
        let file = try String(contentsOfFile: container + "/.purgefs/daemon.log", encoding: .utf8)
        XCTAssertEqual(try succeed("log", container, "--daemon"), file)
        try "".write(toFile: container + "/.purgefs/daemon.log", atomically: false, encoding: .utf8)
        XCTAssertEqual(try succeed("log", container, "--daemon"), "The daemon has logged nothing.\n")
    }
}
