import PurgeCore
@testable import PurgeEngines
import XCTest
@testable import PurgeCommand

final class ParsedArgumentsTests: XCTestCase {
    private func parse(_ arguments: [String]) throws(CommandExit) -> ParsedArguments {
        try ParsedArguments(arguments, command: "space", help: "HELP", valueFlags: ["--capacity": "SIZE"], switchFlags: ["--json"])
    }

    private func assertUsage(_ arguments: [String], _ line: String, at: UInt = #line) {
        do throws(CommandExit) {
            _ = try parse(arguments)
            XCTFail("\(arguments) parsed", line: at)
        } catch {
            XCTAssertEqual(error, .usage(line), line: at)
        }
    }

    func testPathsFlagsAndValues() throws {
        let parsed = try parse(["/m", "--capacity", "1G", "--json"])
        XCTAssertEqual(parsed.paths, ["/m"])
        XCTAssertEqual(parsed.values, ["--capacity": "1G"])
        XCTAssertEqual(parsed.switches, ["--json"])
        XCTAssertEqual(try parse(["--capacity=2M", "/m"]).values, ["--capacity": "2M"])
        XCTAssertEqual(try parse(["--", "--json", "-"]).paths, ["--json", "-"])
        XCTAssertEqual(try parse(["-"]).paths, ["-"])
    }

    func testHelpAnywhereBeforeDoubleDash() {
        for arguments in [["-h"], ["/m", "--help"], ["--capacity", "x", "-h"]] {
            XCTAssertThrowsError(try parse(arguments)) { XCTAssertEqual($0 as? CommandExit, .help("HELP")) }
        }
        XCTAssertEqual(try parse(["--", "-h"]).paths, ["-h"])
    }

    func testMistakes() {
        assertUsage(["/m", "--bogus"], "space: unknown flag '--bogus' (see purgefs space --help)")
        assertUsage(["/m", "--capacity"], "space: --capacity needs a SIZE")
        assertUsage(["--capacity", "1G", "--capacity=2G"], "space: --capacity is given twice")
        assertUsage(["--json", "--json"], "space: --json is given twice")
        assertUsage(["--json=yes"], "space: --json takes no value (got --json=yes)")
    }

    func testOnePath() throws {
        XCTAssertEqual(try parse(["/m"]).onePath("MOUNTPOINT", command: "space"), "/m")
        XCTAssertThrowsError(try parse([]).onePath("MOUNTPOINT", command: "space")) {
            XCTAssertEqual($0 as? CommandExit, .usage("space: MOUNTPOINT is missing (see purgefs space --help)"))
        }
        XCTAssertThrowsError(try parse(["/a", "/b"]).onePath("MOUNTPOINT", command: "space")) {
            XCTAssertEqual($0 as? CommandExit, .usage("space: unexpected argument '/b'; give one MOUNTPOINT"))
        }
        XCTAssertThrowsError(try parse([""]).onePath("MOUNTPOINT", command: "space")) {
            XCTAssertEqual($0 as? CommandExit, .usage("space: an empty path was given"))
        }
    }

    func testSizes() throws {
        XCTAssertEqual(try parse(["--capacity", "1.5K"]).size("--capacity", command: "space"), ByteSize(bytes: 1536))
        XCTAssertNil(try parse([]).size("--capacity", command: "space"))
        XCTAssertEqual(try parse(["--capacity", "0"]).size("--capacity", command: "space"), ByteSize(bytes: 0))
        XCTAssertThrowsError(try parse(["--capacity", "0"]).size("--capacity", command: "space", positive: true)) {
            XCTAssertEqual($0 as? CommandExit, .usage("space: --capacity 0: must be more than 0"))
        }
        XCTAssertThrowsError(try parse(["--capacity", "12X"]).size("--capacity", command: "space")) {
            XCTAssertEqual($0 as? CommandExit, .usage("space: --capacity 12X: not a size (bytes, or a number with K, M, G or T)"))
        }
        XCTAssertThrowsError(try parse(["--capacity=-1G"]).size("--capacity", command: "space")) {
            XCTAssertEqual($0 as? CommandExit, .usage("space: --capacity -1G: must not be negative"))
        }
    }
}
