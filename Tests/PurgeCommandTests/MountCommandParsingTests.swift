@testable import PurgeEngines
import XCTest
import PurgeCore
@testable import PurgeCommand

final class MountCommandParsingTests: XCTestCase {
    private func parse(_ arguments: [String]) throws(CommandExit) -> MountCommand {
        try MountCommand(parsing: arguments)
    }

    private func assertUsage(_ arguments: [String], _ line: String, file: StaticString = #filePath, at: UInt = #line) {
        do throws(CommandExit) {
            _ = try parse(arguments)
            XCTFail("\(arguments) parsed", file: file, line: at)
        } catch {
            XCTAssertEqual(error, .usage(line), file: file, line: at)
        }
    }

    func testInPlace() throws {
        let command = try parse(["/srv/app"])
        XCTAssertEqual(command.containerArgument, "/srv/app")
        XCTAssertNil(command.mountpointArgument)
        XCTAssertFalse(command.foreground)
        XCTAssertEqual(command.options, MountOptions())
    }

    func testFlagsBeforeBetweenAndAfterPaths() throws {
        let command = try parse(["-o", "capacity=1G", "/c", "-f", "-ohigh=30%,low=5%", "/m", "-o", "ro", "-o", "capacity=2G"])
        XCTAssertEqual(command.containerArgument, "/c")
        XCTAssertEqual(command.mountpointArgument, "/m")
        XCTAssertTrue(command.foreground)
        XCTAssertEqual(command.optionArguments, ["capacity=1G", "high=30%,low=5%", "ro", "capacity=2G"])
        XCTAssertEqual(command.options.capacity, 2 << 30)
        XCTAssertEqual(command.options.low, .percent(5))
        XCTAssertEqual(command.options.fuseOptions, ["ro"])
    }

    func testDoubleDashEndsFlags() throws {
        let command = try parse(["-f", "--", "-weird", "-o"])
        XCTAssertEqual(command.containerArgument, "-weird")
        XCTAssertEqual(command.mountpointArgument, "-o")
        XCTAssertTrue(try parse(["--foreground", "/c"]).foreground)
    }

    func testUsageErrors() {
        assertUsage([], "mount: CONTAINER is missing (see purgefs mount --help)")
        assertUsage(["-f"], "mount: CONTAINER is missing (see purgefs mount --help)")
        assertUsage(["/c", "-o"], "-o needs an option list, as in -o capacity=1G")
        assertUsage(["/c", "/m", "/x"], "mount: unexpected argument '/x'; give CONTAINER and at most one MOUNTPOINT")
        assertUsage(["/c", "-x"], "mount: unknown flag '-x' (see purgefs mount --help)")
        assertUsage(["/c", "--force"], "mount: unknown flag '--force' (see purgefs mount --help)")
        assertUsage([""], "mount: an empty path was given")
        assertUsage(["/c", "-o", "capacity=12Q"], "capacity=12Q: not a size (bytes, or a number with K, M, G or T)")
        assertUsage(["/c", "-obogus"], "unknown mount option 'bogus'")
        assertUsage(["/c", "-o", "low=50%"], "low=50% is above high=20%: purging starts below low and stops at high")
    }

    func testDaemonArgumentsKeepTheOptionsAsTyped() throws {
        var command = try parse(["/c", "-o", #"fsname=a\,b"#, "-oro"])
        command.setResolvedPathsForTesting(container: "/real/c", mountpoint: "/real/c")
        XCTAssertEqual(command.daemonArguments,
                       ["purgefs", "mount", "-f", "-o", #"fsname=a\,b"#, "-o", "ro", "--", "/real/c", "/real/c"])
        // The daemon reads its arguments back to the same command.
        let again = try MountCommand(parsing: Array(command.daemonArguments.dropFirst(2)))
        XCTAssertEqual(again.options, command.options)
        XCTAssertTrue(again.foreground)
        XCTAssertEqual(again.containerArgument, "/real/c")
    }

    func testMountErrorPrefixIsNotRepeated() {
        XCTAssertEqual(MountCommand.withoutProgramPrefix("purgefs: not built"), "not built")
        XCTAssertEqual(MountCommand.withoutProgramPrefix("fuse: failed"), "fuse: failed")
    }

    func testValidationResolvesAndChecksPaths() throws {
        var missing = try parse(["/nonexistent/purgefs-test"])
        XCTAssertThrowsError(try missing.validate()) { error in
            XCTAssertEqual(error as? CommandExit, .failure("container /nonexistent/purgefs-test: No such file or directory"))
        }
        var notDirectory = try parse(["/proc/self/status"])
        XCTAssertThrowsError(try notDirectory.validate()) { error in
            XCTAssertEqual(error as? CommandExit, .failure("container /proc/self/status is not a directory"))
        }
        var inside = try parse(["/proc", "/proc/self/../1"])
        XCTAssertThrowsError(try inside.validate()) { error in
            XCTAssertEqual(error as? CommandExit, .failure("mountpoint /proc/1 is inside the container /proc: the mount would contain itself"))
        }
        var cloudInside = try parse(["/proc", "-o", "cloud=/proc/remote"])
        XCTAssertThrowsError(try cloudInside.validate()) { error in
            XCTAssertEqual(error as? CommandExit, .usage("cloud=/proc/remote: the remote store must be outside the container /proc, and must not hold it"))
        }
        var good = try parse(["/proc/self/../self/.."])
        XCTAssertNoThrow(try good.validate())
        XCTAssertEqual(good.container, "/proc")
        XCTAssertEqual(good.mountpoint, "/proc")
    }
}
