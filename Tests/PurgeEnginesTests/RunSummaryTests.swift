@testable import PurgeEngines
import PurgeSys
import XCTest

final class RunSummaryTests: XCTestCase {
    private func summary() -> RunSummary {
        RunSummary(container: "/c", mountpoint: "/c", scratch: false, command: ["app", "--flag"])
    }

    func testStatusIsTheCommandsOr128PlusItsSignal() {
        var run = summary()
        XCTAssertNil(run.commandStatus, "never started")
        run.ended = WaitStatus(raw: 3 << 8)
        XCTAssertEqual(run.commandStatus, 3)
        run.ended = WaitStatus(raw: 9)
        XCTAssertEqual(run.commandStatus, 137)
        XCTAssertEqual(run.json["signal"], .string("SIGKILL"))
        XCTAssertEqual(run.json["exit_code"], .null)
    }

    func testPurgesAreCountedByReasonFromTheStartOfTheRun() {
        var run = summary()
        let entries = [
            PurgeLogEntry(time: 99, path: "tmp/before", bytes: 7, size: 7, lastUsed: 0, reason: "manual", action: "delete"),
            PurgeLogEntry(time: 100, path: "caches/a", bytes: 4096, size: 4000, lastUsed: 0, reason: "monitor", action: "delete"),
            PurgeLogEntry(time: 101, path: "caches/b", bytes: 8192, size: 8000, lastUsed: 0, reason: "write", action: "delete"),
            PurgeLogEntry(time: 102, path: "caches/c", bytes: 4096, size: 10, lastUsed: 0, reason: "monitor", action: "truncate"),
        ]
        run.count(entries, since: 100)
        XCTAssertEqual(run.purged, [RunSummary.Reason(reason: "monitor", bytes: 8192, files: 2),
                                    RunSummary.Reason(reason: "write", bytes: 8192, files: 1)])
        XCTAssertEqual(run.purgedBytes, 16384)
        XCTAssertEqual(run.purgedFiles, 3)
        XCTAssertTrue(run.text.contains("purged            16 KiB in 3 files (monitor 8 KiB in 2 files, write 8 KiB in 1 file)"), run.text)
    }

    func testFaultsInjectedIsTheSumOfFiredOrNothing() {
        XCTAssertEqual(RunJob.faultsInjected(#"[{"id":1,"fired":2},{"id":2,"fired":3}]"#), 5)
        XCTAssertEqual(RunJob.faultsInjected(#"{"rules":[{"fired":4}]}"#), 4)
        XCTAssertEqual(RunJob.faultsInjected("[]"), 0)
        XCTAssertNil(RunJob.faultsInjected(#"[{"id":1}]"#), "no count: n/a rather than a guess")
        XCTAssertNil(RunJob.faultsInjected("not json"))
        var run = summary()
        XCTAssertTrue(run.text.contains("faults injected   n/a (purgefs fault list was not read)"), run.text)
        run.faultsInjected = 2
        XCTAssertTrue(run.text.contains("faults injected   2"), run.text)
    }

    func testStepsInTextAndJSON() {
        var run = summary()
        run.steps = [RunSummary.Step(line: 1, text: "at 0s squeeze 5 MiB", state: .done, atMilliseconds: 12, detail: "Set external 59 MiB."),
                     RunSummary.Step(line: 4, text: "when available < 1 MiB timeout 1s crash", state: .timedOut, atMilliseconds: 1012,
                                     detail: "when available < 1 MiB did not hold within 1s")]
        XCTAssertTrue(run.text.contains("    line 1  at 0s squeeze 5 MiB                      done at 0.0 s: Set external 59 MiB."), run.text)
        XCTAssertTrue(run.text.contains("    line 4  when available < 1 MiB timeout 1s crash  timed out at 1.0 s: when available"), run.text)
        guard case .array(let steps)? = run.json["steps"] else { return XCTFail("no steps") }
        XCTAssertEqual(steps.last?["state"], .string("timed_out"))
        XCTAssertEqual(steps.last?["at_ms"], .integer(UInt64(1012)))
        XCTAssertEqual(steps.first?["line"], .integer(1))
    }

    func testEveryJSONFieldIsDocumented() {
        guard case .object(let fields) = summary().json else { return XCTFail("not an object") }
        let documented = RunSummary.fieldHelp.flatMap { $0.0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
        XCTAssertEqual(Set(fields.map(\.0)), Set(documented))
    }
}
