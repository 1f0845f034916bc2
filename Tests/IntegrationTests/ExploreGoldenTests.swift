import Foundation
import Glibc
import XCTest

/// `purgefs explore --golden CMD` on a config writer that acknowledges
/// each save on stdout: the careful one passes every state; the one
/// without fsyncs loses acknowledged saves under the default model (ext4,
/// whose flush on rename keeps the file whole) and shows a half-made file
/// under xfs; a checker and --golden must both pass; output that arrives
/// all at exit is warned about.
final class ExploreGoldenTests: XCTestCase {
    private var fixture: ExploreFixture!

    override func setUpWithError() throws {
        fixture = try ExploreFixture()
    }

    override func tearDownWithError() throws {
        fixture?.remove()
    }

    func testTheCarefulWriterPassesEveryStateUnderGolden() throws {
        let result = try fixture.explore(["--golden", "cat config.json", "--report", fixture.report, fixture.container, "--",
                                          try fixture.writer(fsync: true, rounds: 3)])
        XCTAssertEqual(result.status, 0, "\(result)")
        let json = try fixture.reportJSON()
        XCTAssertEqual(json["failed"] as? Int, 0, "\(result)")
        XCTAssertEqual(json["operations"] as? Int, 15, "\(result)")
        XCTAssertGreaterThan(json["states"] as? Int ?? 0, 15)
        XCTAssertEqual(json["golden"] as? String, "cat config.json")
        XCTAssertEqual(json["acknowledgments"] as? Int, 3)
        XCTAssertTrue(json["check"] is NSNull, "no checker given")
        XCTAssertEqual(json["warnings"] as? [String], [], "the lines came as they were printed")
        XCTAssertTrue(result.stdout.contains("  golden: cat config.json (3 acknowledgments printed)\n"), result.stdout)
        XCTAssertFalse(result.stderr.contains("warning"), result.stderr)
    }

    /// Without fsyncs, ext4 keeps config.json whole (a checker of its shape
    /// passes every state), but a rename not yet durable takes back a save
    /// the writer acknowledged: the state right after the first rename, with
    /// names lost, holds version 0 though "saved 1" was printed. Found only
    /// because the line is placed where it was printed, not at exit.
    func testTheWriterWithoutFsyncLosesAcknowledgedSavesOnExt4() throws {
        let result = try fixture.explore(["--golden", "cat config.json", "--report", fixture.report, fixture.container, "--",
                                          try fixture.writer(fsync: false)])
        XCTAssertEqual(result.status, 1, "\(result)")
        let json = try fixture.reportJSON()
        XCTAssertEqual(json["operations"] as? Int, 6, "create, write, rename, twice: \(result)")
        let found = fixture.failures(json)
        let byState = Dictionary(found.map { ($0["state"] as? String ?? "", $0) }, uniquingKeysWith: { first, _ in first })
        XCTAssertEqual(Set(byState.keys), ["3/names-lost", "4/names-lost", "5/names-lost", "6/names-lost"], "\(found)")
        XCTAssertEqual(byState["3/names-lost"]?["stderr"] as? String, "view matches the start, before the last acknowledged: line 1")
        XCTAssertEqual(byState["6/names-lost"]?["stderr"] as? String, "view matches the start, before the last acknowledged: line 2")
        for failure in found {
            XCTAssertEqual(failure["kind"] as? String, "lost-acknowledgment", "\(failure)")
        }
        let checked = try fixture.explore(["--check", #"grep -q '^{"version": [0-9]*}$' "$PURGEFS_CRASH_STATE/config.json""#,
                                           fixture.container, "--", try fixture.writer(fsync: false)])
        XCTAssertEqual(checked.status, 0, "a whole file in every state: only --golden knows what was promised: \(checked)")
    }

    /// Under xfs the renamed file may be empty: a view of no point at all.
    func testAHalfMadeFileMatchesNoAcknowledgedPoint() throws {
        let result = try fixture.explore(["--golden", "cat config.json", "--model", "xfs", "--report", fixture.report, fixture.container, "--",
                                          try fixture.writer(fsync: false)])
        XCTAssertEqual(result.status, 1, "\(result)")
        let found = fixture.failures(try fixture.reportJSON())
        let empty = try XCTUnwrap(found.first { $0["state"] as? String == "3/names-kept" }, "\(found)")
        XCTAssertEqual(empty["stderr"] as? String, "view matches no acknowledged point; last acknowledged: line 1")
        XCTAssertEqual(empty["kind"] as? String, "corruption")
        XCTAssertEqual(found.first { $0["state"] as? String == "3/names-lost" }?["kind"] as? String, "lost-acknowledgment", "\(found)")
    }

    /// A checker and --golden: a state passes when both do.
    func testTheCheckerAndGoldenMustBothPass() throws {
        let refuses = #"test "$PURGEFS_CRASH_POINT" != 2 || { echo checker says no >&2; exit 1; }"#
        let careful = try fixture.explore(["--golden", "cat config.json", "--check", refuses, "--report", fixture.report,
                                           fixture.container, "--", try fixture.writer(fsync: true)])
        XCTAssertEqual(careful.status, 1, "\(careful)")
        let found = fixture.failures(try fixture.reportJSON())
        XCTAssertFalse(found.isEmpty, "\(careful)")
        for failure in found {
            XCTAssertEqual(failure["point"] as? Int, 2, "\(failure)")
            XCTAssertEqual(failure["stderr"] as? String, "checker says no", "\(failure)")
        }
        let careless = try fixture.explore(["--golden", "cat config.json", "--check", "true", "--report", fixture.report,
                                            fixture.container, "--", try fixture.writer(fsync: false)])
        XCTAssertEqual(careless.status, 1, "the checker passes, --golden does not: \(careless)")
        XCTAssertEqual(fixture.failures(try fixture.reportJSON()).count, 4, "\(careless)")
    }

    /// Every line at exit is what a block-buffered stdout gives: the report and stderr say so.
    func testOutputThatArrivesAtExitIsWarnedAbout() throws {
        let app = try fixture.script("buffered", """
            cd "$PURGEFS_MOUNT" || exit 1
            for i in 1 2; do
              printf '{"version": %d}\\n' $i > tmp/config.json.new
              sync tmp/config.json.new
              mv tmp/config.json.new config.json
              sync .
            done
            echo "saved 1"
            echo "saved 2"
            """)
        let result = try fixture.explore(["--golden", "cat config.json", "--report", fixture.report, fixture.container, "--", app])
        let json = try fixture.reportJSON()
        let warnings = json["warnings"] as? [String] ?? []
        XCTAssertEqual(warnings.count, 1, "\(result)")
        XCTAssertTrue(warnings.first?.contains("stdbuf -oL") == true, "\(warnings)")
        XCTAssertTrue(result.stderr.contains("explore: warning: every line the command printed came after its last operation"), result.stderr)
        XCTAssertTrue(result.stdout.contains("  warning: every line"), result.stdout)
    }

    /// --junit: a failing test case per group, one passing for the states that passed, as ElementTree reads it.
    func testJUnitHasACasePerGroup() throws {
        let junit = fixture.scratch + "/explore.xml"
        let result = try fixture.explore(["--golden", "cat config.json", "--model", "xfs", "--junit", junit, "--report", fixture.report,
                                          fixture.container, "--", try fixture.writer(fsync: false)])
        XCTAssertEqual(result.status, 1, "\(result)")
        let json = try fixture.reportJSON()
        let groups = try XCTUnwrap(json["groups"] as? [[String: Any]])
        XCTAssertGreaterThan(groups.count, 1, "both kinds of failure: \(groups)")
        XCTAssertEqual(groups.map { $0["kind"] as? String ?? "" }.sorted { $0 < $1 }, groups.map { $0["kind"] as? String ?? "" },
                       "corruption before lost-acknowledgment")
        let parsed = try Subprocess.run(["python3", "-c", """
            import sys, xml.etree.ElementTree as E
            suite = E.parse(sys.argv[1]).getroot().find('testsuite')
            cases = suite.findall('testcase')
            print(suite.get('tests'), suite.get('failures'), len(cases), sum(1 for c in cases if c.find('failure') is not None))
            print(cases[0].find('failure').get('message'))
            print(cases[-1].get('name'))
            """, junit], timeout: 60)
        XCTAssertEqual(parsed.status, 0, "\(parsed)")
        let passed = try XCTUnwrap(json["passed"] as? Int), states = try XCTUnwrap(json["states"] as? Int)
        XCTAssertEqual(parsed.stdout, "\(groups.count + 1) \(groups.count) \(groups.count + 1) \(groups.count)\n"
            + "\(groups[0]["message"] as? String ?? "")\n\(passed) of \(states) crash states passed\n")
    }

    /// A view that hangs on a crash state is killed at --check-timeout and its state fails as timed out;
    /// one that hangs on a state the command itself made stops the exploration.
    func testAGoldenCommandThatHangsRunsOutOfTime() throws {
        let view = #"if [ -s config.json ]; then cat config.json; else exec sleep 600; fi"#
        let result = try fixture.explore(["--golden", view, "--model", "xfs", "--check-timeout", "1s", "--report", fixture.report,
                                          fixture.container, "--", try fixture.writer(fsync: false, rounds: 1)])
        XCTAssertEqual(result.status, 1, "\(result)")
        let found = fixture.failures(try fixture.reportJSON())
        XCTAssertEqual(found.first { $0["state"] as? String == "3/names-kept" }?["stderr"] as? String, "timed out after 1s", "\(found)")
        let hangs = try fixture.explore(["--golden", "exec sleep 600", "--check-timeout", "1s", fixture.container, "--",
                                         try fixture.writer(fsync: true, rounds: 1)])
        XCTAssertEqual(hangs.status, 1, "\(hangs)")
        XCTAssertTrue(hangs.stderr.contains("explore: the --golden command ran out of time (--check-timeout) on the state at the start"), hangs.stderr)
    }

    func testAGoldenCommandThatIsNotThereIsAUsageError() throws {
        let result = try fixture.explore(["--golden", "no-such-view-command x", fixture.container, "--", "true"])
        XCTAssertEqual(result.status, 64, "\(result)")
        XCTAssertEqual(result.stderrLines.count, 1, "\(result)")
        XCTAssertTrue(result.stderr.contains("explore: the --golden command cannot run: no-such-view-command: command not found"), "\(result)")
    }
}
