import PurgeCore
@testable import PurgeEngines
import XCTest

@testable import PurgeCommand

final class FaultCommandParsingTests: XCTestCase {
    func testAddTakesTheRuleAfterTheMountPoint() throws {
        let command = try FaultCommand(parsing: ["add", "/mnt", "--op", "write", "--path", "Documents/*.db", "--errno", "EIO", "--after", "3", "--times", "1"])
        XCTAssertEqual(command.pathArgument, "/mnt")
        guard case .add(let rule) = command.action else { return XCTFail("\(command.action)") }
        XCTAssertEqual(rule.line, "--op write --path 'Documents/*.db' --errno EIO --after 3 --times 1")
    }

    func testListAndClear() throws {
        XCTAssertEqual(try FaultCommand(parsing: ["list", "/mnt", "--json"]).action, .list(json: true))
        XCTAssertEqual(try FaultCommand(parsing: ["list", "/mnt"]).action, .list(json: false))
        XCTAssertEqual(try FaultCommand(parsing: ["clear", "/mnt"]).action, .clear(nil))
        XCTAssertEqual(try FaultCommand(parsing: ["clear", "/mnt", "4"]).action, .clear(4))
    }

    func testMistakesAreUsageErrors() {
        let cases: [([String], String)] = [
            ([], "say add, list or clear"),
            (["add"], "MOUNTPOINT is missing"),
            (["add", "--op", "write"], "MOUNTPOINT is missing"),
            (["add", "/mnt", "--op", "write", "--path", "a", "--errno", "EIO", "extra"], "unexpected argument 'extra'"),
            (["add", "/mnt", "--op", "read", "--path", "a", "--short-write"], "writes only"),
            (["list", "/mnt", "--yaml"], "--yaml"),
            (["clear", "/mnt", "0"], "not a rule ID"),
            (["clear", "/mnt", "1", "2"], "unexpected argument '2'"),
            (["zap", "/mnt"], "unknown action 'zap'"),
        ]
        for (arguments, words) in cases {
            XCTAssertThrowsError(try FaultCommand(parsing: arguments), "\(arguments)") { error in
                guard case .usage(let line) = error as? CommandExit else { return XCTFail("\(arguments): \(error)") }
                XCTAssertTrue(line.contains(words), "\(arguments): \(line)")
            }
        }
        XCTAssertThrowsError(try FaultCommand(parsing: ["add", "--help"])) { error in
            guard case .help = error as? CommandExit else { return XCTFail("\(error)") }
        }
    }

    func testTheTableAndJSON() throws {
        let listings = try FaultListing.parse("1\t5\t2\t--op write --path a --errno EIO --seed 3\n12\t0\t0\t--op read --path '**' --delay 250ms --seed 9\n")
        XCTAssertEqual(FaultCommand.table(listings, mount: "/m"), """
            ID  MATCHED  FIRED  RULE
             1        5      2  --op write --path a --errno EIO --seed 3
            12        0      0  --op read --path '**' --delay 250ms --seed 9
            """)
        XCTAssertEqual(FaultCommand.table([], mount: "/m"), "No fault rules on /m.")
        let json = FaultCommand.json(listings[1])
        XCTAssertEqual(json["action"], .string("delay"))
        XCTAssertEqual(json["delay_ns"], .integer(UInt64(250_000_000)))
        XCTAssertEqual(json["fired"], .integer(UInt64(0)))
    }
}
