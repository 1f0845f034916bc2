@testable import PurgeEngines
import XCTest
@testable import PurgeCommand

/// `purgefs log` flags: `--json`, `--daemon`, `--state DIR`.
final class LogCommandParsingTests: XCTestCase {
    func testFlags() throws {
        let plain = try LogCommand(parsing: ["/m"])
        XCTAssertFalse(plain.json)
        XCTAssertFalse(plain.daemon)
        XCTAssertNil(plain.stateArgument)
        XCTAssertTrue(try LogCommand(parsing: ["/m", "--daemon"]).daemon)
        XCTAssertEqual(try LogCommand(parsing: ["/c", "--state", "/var/lib/s", "--json"]).stateArgument, "/var/lib/s")
        XCTAssertEqual(try LogCommand(parsing: ["--state=/s", "/c"]).stateArgument, "/s")
        for (arguments, line) in [
            (["/m", "--json", "--daemon"], "log: give --json or --daemon, not both (the daemon's log is text)"),
            (["/m", "--state"], "log: --state needs a DIR"),
            (["/m", "--state", "/a", "--state", "/b"], "log: --state is given twice"),
        ] {
            XCTAssertThrowsError(try LogCommand(parsing: arguments)) { XCTAssertEqual($0 as? CommandExit, .usage(line)) }
        }
    }

    func testHelpNamesTheFlags() {
        for flag in ["--json", "--daemon", "--state DIR"] { XCTAssertTrue(LogCommand.help.contains(flag), flag) }
    }
}
