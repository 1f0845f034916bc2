@testable import PurgeEngines
import XCTest
import PurgeCore
@testable import PurgeCommand

final class RouteTests: XCTestCase {
    private func route(_ arguments: [String], existing: Set<String> = []) throws(CommandExit) -> Purgefs.Route {
        try Purgefs.route(arguments, pathExists: { existing.contains($0) })
    }

    private func assertExit(_ arguments: [String], existing: Set<String> = [], line: UInt = #line,
                            _ check: (CommandExit) -> Void) {
        do throws(CommandExit) {
            _ = try route(arguments, existing: existing)
            XCTFail("\(arguments) did not exit", line: line)
        } catch {
            check(error)
        }
    }

    func testNoArgumentsIsAUsageError() {
        assertExit([]) { XCTAssertEqual($0, .usage("a command is missing (see purgefs --help)")) }
    }

    func testTopLevelHelp() {
        for arguments in [["--help"], ["-h"], ["help"]] {
            assertExit(arguments) { exit in
                guard case .help(let text) = exit else { return XCTFail("\(exit)") }
                XCTAssertTrue(text.contains("purgefs mount CONTAINER [MOUNTPOINT]"))
                XCTAssertTrue(text.contains("unmount"))
                XCTAssertFalse(text.contains("Not built yet"), "every command is built")
            }
        }
    }

    func testHelpForEachCommand() {
        assertExit(["help", "mount"]) { XCTAssertEqual($0, .help(MountCommand.help)) }
        assertExit(["help", "unmount"]) { XCTAssertEqual($0, .help(UnmountCommand.help)) }
        assertExit(["mount", "--help"]) { XCTAssertEqual($0, .help(MountCommand.help)) }
        assertExit(["mount", "/c", "-o", "bogus", "-h"]) { XCTAssertEqual($0, .help(MountCommand.help)) }
        assertExit(["unmount", "-h"]) { XCTAssertEqual($0, .help(UnmountCommand.help)) }
        assertExit(["help", "evict"]) { XCTAssertEqual($0, .help(EvictCommand.help)) }
        assertExit(["download", "--help"]) { XCTAssertEqual($0, .help(DownloadCommand.help)) }
        assertExit(["help", "clone"]) { XCTAssertEqual($0, .help(CloneCommand.help)) }
        assertExit(["help", "metrics"]) { XCTAssertEqual($0, .help(MetricsCommand.help)) }
        assertExit(["help", "usage"]) { XCTAssertEqual($0, .help(UsageCommand.help)) }
        assertExit(["log", "--help"]) { XCTAssertEqual($0, .help(LogCommand.help)) }
        assertExit(["help", "nope"]) { XCTAssertEqual($0, .usage("unknown command or topic 'nope' (see purgefs --help)")) }
    }

    func testVersion() throws {
        guard case .version = try route(["--version"]) else { return XCTFail() }
    }

    func testUnknownCommandsAndFlags() {
        assertExit(["mout", "/c"]) { XCTAssertEqual($0, .usage("unknown command 'mout' (see purgefs --help)")) }
        assertExit(["--bogus"]) { XCTAssertEqual($0, .usage("unknown option '--bogus' (see purgefs --help)")) }
    }

    func testMountSubcommand() throws {
        guard case .run(let command) = try route(["mount", "/c"]), let mount = command as? MountCommand else { return XCTFail() }
        XCTAssertEqual(mount.containerArgument, "/c")
        XCTAssertNil(mount.mountpointArgument)
    }

    func testTheMountFuse3FormNeedsAPathFirstAndBothPaths() throws {
        guard case .run(let command) = try route(["/srv/app", "/srv/view", "-o", "rw,capacity=1G"], existing: ["/srv/app"]),
              let mount = command as? MountCommand else { return XCTFail() }
        XCTAssertEqual(mount.containerArgument, "/srv/app")
        XCTAssertEqual(mount.mountpointArgument, "/srv/view")
        XCTAssertFalse(mount.foreground)
        XCTAssertEqual(mount.options.capacity, 1 << 30)
        XCTAssertEqual(mount.options.fuseOptions, ["rw"])

        assertExit(["/srv/app", "-o", "rw"], existing: ["/srv/app"]) {
            XCTAssertEqual($0, .usage("/srv/app: give both CONTAINER and MOUNTPOINT, or use purgefs mount CONTAINER to mount in place"))
        }
        // Written as a path but missing: still the mount form, so mounting reports the missing container.
        guard case .run(let missing) = try route(["/srv/gone", "/srv/view"]), missing is MountCommand else { return XCTFail() }
        assertExit(["bogus", "/srv/view"]) { XCTAssertEqual($0, .usage("unknown command 'bogus' (see purgefs --help)")) }
    }

    func testUnmountSubcommand() throws {
        guard case .run(let command) = try route(["unmount", "/m"]), let unmount = command as? UnmountCommand else { return XCTFail() }
        XCTAssertEqual(unmount.pathArgument, "/m")
    }
}
