import Foundation
import Glibc
import PurgeCore
import PurgeEngines
import PurgeSys
import XCTest

/// explore driven in-process, without the command line, as a test library
/// would: `ExploreSession` with the built binary mounting the copy returns
/// the report, leaves nothing mounted and removes its work directory. The
/// work directory goes under the fixture's scratch directory (TMPDIR, set
/// for the test and restored after it).
final class ExploreSessionTests: XCTestCase {
    private var fixture: ExploreFixture!
    private var savedTemporary: String?

    override func setUpWithError() throws {
        fixture = try ExploreFixture()
        savedTemporary = ProcessInfo.processInfo.environment["TMPDIR"]
        setenv("TMPDIR", fixture.scratch, 1)
    }

    override func tearDownWithError() throws {
        if let savedTemporary { setenv("TMPDIR", savedTemporary, 1) } else { unsetenv("TMPDIR") }
        fixture?.remove()
    }

    /// Holds when config.json holds one whole version.
    private let configCheck = #"grep -q '^{"version": [0-9]*}$' "$PURGEFS_CRASH_STATE/config.json" || { echo "config.json: $(wc -c < "$PURGEFS_CRASH_STATE/config.json") bytes, no version" >&2; exit 1; }"#

    private func explore(_ app: String, model: CrashFilesystemModel) throws -> ExploreReport {
        var session = ExploreSession(container: fixture.container, options: [], command: [app], check: configCheck, models: [model])
        session.purgefs = fixture.binary
        let report: ExploreReport
        do throws(CommandExit) {
            report = try session.run()
        } catch {
            XCTFail("explore in-process: \(error.line)")
            throw error
        }
        XCTAssertEqual(MountTable.mounts(under: fixture.scratch).map(\.mountPoint), [], "nothing left mounted")
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: fixture.scratch)) ?? []
        XCTAssertEqual(entries.filter { $0.hasPrefix("purgefs-explore.") }, [], "the work directory is removed")
        return report
    }

    func testTheCarefulWriterRecoversFromEveryState() throws {
        let report = try explore(try fixture.writer(fsync: true), model: .ext4)
        XCTAssertEqual(report.failed, 0, report.text(shown: 5))
        XCTAssertEqual(report.exitStatus, 0, report.text(shown: 5))
        XCTAssertEqual(report.json["operations"]?.integerValue, 10, "create, write, fsync, rename, fsync of the directory, twice")
        XCTAssertGreaterThan(report.states, 10, "both ends of the name range where they differ")
        XCTAssertEqual(report.passed, report.states)
    }

    func testTheCarelessWriterIsFoundNamingTheRename() throws {
        let report = try explore(try fixture.writer(fsync: false), model: .xfs)
        XCTAssertEqual(report.exitStatus, 1, report.text(shown: 5))
        let failures = report.json["failures"]?.arrayValue ?? []
        XCTAssertEqual(failures.count, report.failed)
        let renames = failures.filter { $0["operation"]?.stringValue == "rename tmp/config.json.new -> config.json" }
        XCTAssertFalse(renames.isEmpty, report.text(shown: 5))
        for failure in renames {
            XCTAssertEqual(failure["stderr"]?.stringValue, "config.json: 0 bytes, no version")
        }
    }
}
