@testable import PurgeEngines
import PurgeCore
import XCTest
@testable import PurgeCommand

/// `purgefs explore`'s flags, read in-process: each flag's field, and the
/// usage error of each malformed argument (ExploreTests runs the binary).
final class ExploreCommandParsingTests: XCTestCase {
    func testFlagsSetTheirFields() throws {
        let plain = try ExploreCommand(parsing: ["--check", "true", "/c", "--", "app", "x"])
        XCTAssertEqual(plain.containerArgument, "/c")
        XCTAssertEqual(plain.command, ["app", "x"])
        XCTAssertEqual(plain.check, "true")
        XCTAssertNil(plain.golden)
        XCTAssertEqual(plain.models, [.ext4])
        XCTAssertFalse(plain.torn)
        XCTAssertFalse(plain.json)
        XCTAssertNil(plain.maxStates)
        XCTAssertNil(plain.timeout)
        XCTAssertNil(plain.checkTimeout)
        XCTAssertNil(plain.replay)

        let full = try ExploreCommand(parsing: [
            "-o", "capacity=1G", "--check=test -s f", "--golden", "cat f", "--model", "xfs", "--torn", "--max-states", "7",
            "--timeout", "90s", "--check-timeout", "2m", "--keep", "k", "--json", "--report", "r.json", "--junit", "j.xml",
            "--html", "h.html", "-ocrashable", "/c", "--", "app",
        ])
        XCTAssertEqual(full.options, ["capacity=1G", "crashable"])
        XCTAssertEqual(full.check, "test -s f")
        XCTAssertEqual(full.golden, "cat f")
        XCTAssertEqual(full.models, [.xfs])
        XCTAssertTrue(full.torn)
        XCTAssertTrue(full.json)
        XCTAssertEqual(full.maxStates, 7)
        XCTAssertEqual(full.timeout, try DurationSeconds(parsing: "90s"))
        XCTAssertEqual(full.checkTimeout, try DurationSeconds(parsing: "2m"))
        XCTAssertEqual(full.keepArgument, "k")
        XCTAssertEqual(full.reportArgument, "r.json")
        XCTAssertEqual(full.junitArgument, "j.xml")
        XCTAssertEqual(full.htmlArgument, "h.html")

        XCTAssertEqual(try ExploreCommand(parsing: ["--golden", "cat f", "/c", "--", "app"]).check, "")
        XCTAssertEqual(try ExploreCommand(parsing: ["--check", "true", "--models", "all", "/c", "--", "app"]).models,
                       CrashFilesystemModel.allCases)
        let replay = try ExploreCommand(parsing: ["--replay", "r.json", "4/names-lost", "out"])
        XCTAssertEqual(replay.replay?.report, "r.json")
        XCTAssertEqual(replay.replay?.state, CrashExploration.StateID("4/names-lost"))
        XCTAssertEqual(replay.replay?.directory, "out")
    }

    func testMalformedArgumentsAreUsageErrors() {
        let names = CrashFilesystemModel.allCases.map(\.rawValue).joined(separator: ", ")
        for (arguments, line) in [
            (["--check", "true", "/c"], "explore: put -- before the command: purgefs explore --check CMD CONTAINER -- COMMAND [ARG...]"),
            (["--check", "true", "--", "app"], "explore: CONTAINER is missing (see purgefs explore --help)"),
            (["--check", "true", "/c", "/d", "--", "app"], "explore: unexpected argument '/d'; give one CONTAINER"),
            (["/c", "--", "app"],
             "explore: --check CMD is required, or --golden CMD: the command that tells whether a crash state recovered"),
            (["--check", " ", "/c", "--", "app"], "explore: --check needs a command"),
            (["--golden", " ", "/c", "--", "app"], "explore: --golden needs a command"),
            (["--check", "true", "/c", "--"], "explore: the command after -- is missing (see purgefs explore --help)"),
            (["--check", "true", "--max-states", "0", "/c", "--", "app"], "explore: --max-states needs a number of states, at least 1 (got 0)"),
            (["--check", "true", "--max-states", "many", "/c", "--", "app"],
             "explore: --max-states needs a number of states, at least 1 (got many)"),
            (["--check", "true", "--model", "zfs", "/c", "--", "app"], "explore: --model zfs is not a model (\(names))"),
            (["--check", "true", "--models", "ext4,zfs", "/c", "--", "app"],
             "explore: --models takes all or names separated by commas (\(names)); got ext4,zfs"),
            (["--check", "true", "--model", "xfs", "--models", "all", "/c", "--", "app"], "explore: give --model NAME or --models LIST, not both"),
            (["--check", "true", "--timeout", "soon", "/c", "--", "app"],
             "explore: --timeout needs a duration for the command's run, such as 90s, 10m or 1h (got soon: \(durationError("soon")))"),
            (["--check", "true", "--check-timeout", "0", "/c", "--", "app"],
             "explore: --check-timeout needs a duration for one checker run, such as 90s, 10m or 1h (got 0: \(durationError("0")))"),
            (["--check", "true", "--torn", "--torn", "/c", "--", "app"], "explore: --torn is given twice"),
            (["--check", "true", "--json=yes", "/c", "--", "app"], "explore: --json takes no value (got --json=yes)"),
            (["--check", "true", "--keep", "a", "--keep", "b", "/c", "--", "app"], "explore: --keep is given twice"),
            (["--check", "true", "--report", "/c", "--", "app"], "explore: CONTAINER is missing (see purgefs explore --help)"),
            (["--check", "true", "/c", "--html"], "explore: put -- before the command: purgefs explore --check CMD CONTAINER -- COMMAND [ARG...]"),
            (["--check", "true", "--frobnicate", "/c", "--", "app"], "explore: unknown flag '--frobnicate' (see purgefs explore --help)"),
            (["--check", "true", "-o", "state=/s", "/c", "--", "app"], "explore: the copy gets a fresh state of its own; state= cannot be given"),
            (["--check", "true", "-o", "record=/r", "/c", "--", "app"], "explore: record= is explore's own"),
            (["--replay", "r.json", "4"], "explore: --replay takes REPORT STATE DIR and nothing else"),
            (["--replay", "r.json", "four", "out"], "explore: four is not a state (POINT or POINT/VARIANT, as the report names it)"),
        ] {
            XCTAssertThrowsError(try ExploreCommand(parsing: arguments), "\(arguments)") {
                XCTAssertEqual($0 as? CommandExit, .usage(line), "\(arguments)")
            }
        }
    }

    func testHelpIsAskedAnywhereBeforeTheCommand() {
        for arguments in [["--help"], ["-h", "/c"], ["--check", "true", "--help", "/c", "--", "app"], ["--replay", "-h"]] {
            XCTAssertThrowsError(try ExploreCommand(parsing: arguments), "\(arguments)") {
                XCTAssertEqual($0 as? CommandExit, .help(ExploreCommand.help), "\(arguments)")
            }
        }
    }

    /// The help's Flags rows are the table's: each flag's term, and `-o`.
    func testHelpShowsItsTable() {
        for flag in ExploreCommand.flags.flags { XCTAssertTrue(ExploreCommand.help.contains("\n  " + flag.term), flag.term) }
        XCTAssertTrue(ExploreCommand.help.contains("\n  " + OptionArguments.term + "  "))
        XCTAssertTrue(ExploreCommand.help.contains("Flags:\n" + ExploreCommand.flags.rows + "\n\nExample:"))
    }

    private func durationError(_ text: String) -> String {
        do throws(ValueError) {
            _ = try DurationSeconds(parsing: text)
            return "parsed"
        } catch {
            return "\(error)"
        }
    }
}
