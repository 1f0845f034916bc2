@testable import PurgeEngines
import XCTest
@testable import PurgeCommand

final class UnmountCommandTests: XCTestCase {
    private func assertUsage(_ arguments: [String], _ line: String, at: UInt = #line) {
        do throws(CommandExit) {
            _ = try UnmountCommand(parsing: arguments)
            XCTFail("\(arguments) parsed", line: at)
        } catch {
            XCTAssertEqual(error, .usage(line), line: at)
        }
    }

    func testParsing() throws {
        XCTAssertEqual(try UnmountCommand(parsing: ["/m"]).pathArgument, "/m")
        XCTAssertEqual(try UnmountCommand(parsing: ["--", "-m"]).pathArgument, "-m")
        assertUsage([], "unmount: MOUNTPOINT is missing (see purgefs unmount --help)")
        assertUsage(["/a", "/b"], "unmount: unexpected argument '/b'; give one MOUNTPOINT")
        assertUsage(["-l", "/a"], "unmount: unknown flag '-l' (see purgefs unmount --help)")
        XCTAssertFalse(try UnmountCommand(parsing: ["/m"]).flatten)
        XCTAssertTrue(try UnmountCommand(parsing: ["--flatten", "/m"]).flatten)
    }

    func testFlattenParsing() throws {
        let whole = try FlattenCommand(parsing: ["/m"])
        XCTAssertEqual(whole.mountArgument, "/m")
        XCTAssertNil(whole.pathArgument)
        XCTAssertEqual(try FlattenCommand(parsing: ["/m", "/m/a"]).pathArgument, "/m/a")
        for (arguments, line) in [
            ([], "flatten: MOUNTPOINT is missing (see purgefs flatten --help)"),
            (["/m", "/a", "/b"], "flatten: unexpected argument '/b'; give MOUNTPOINT [PATH]"),
            (["/m", ""], "flatten: an empty path was given"),
            (["--all", "/m"], "flatten: unknown flag '--all' (see purgefs flatten --help)"),
        ] {
            do throws(CommandExit) {
                _ = try FlattenCommand(parsing: arguments)
                XCTFail("\(arguments) parsed")
            } catch {
                XCTAssertEqual(error, .usage(line), "\(arguments)")
            }
        }
    }

    func testRefusesWhatIsNotAPurgefsMount() throws {
        var proc = try UnmountCommand(parsing: ["/proc"])
        XCTAssertThrowsError(try proc.validate()) { error in
            XCTAssertEqual(error as? CommandExit, .failure("/proc is a proc mount, not a purgefs mount"))
        }
        var plain = try UnmountCommand(parsing: ["/proc/self/.."])
        XCTAssertThrowsError(try plain.validate()) // resolves to /proc: same refusal
        var notMounted = try UnmountCommand(parsing: ["/nonexistent/purgefs-test/../x"])
        // realpath fails (ENOENT): the lexical path is shown, and why.
        XCTAssertThrowsError(try notMounted.validate()) { error in
            XCTAssertEqual(error as? CommandExit, .failure("/nonexistent/x does not exist"))
        }
    }

    func testAnExistingDirectoryThatIsNotMountedIsNotAMountPoint() throws {
        var command = try UnmountCommand(parsing: ["/proc/self/fd/.."])
        XCTAssertThrowsError(try command.validate()) { error in
            guard case .failure(let line)? = error as? CommandExit else { return XCTFail("\(error)") }
            XCTAssertTrue(line.hasSuffix("is not a mount point"), line)
        }
    }
}
