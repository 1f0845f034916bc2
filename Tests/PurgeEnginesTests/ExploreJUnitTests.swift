import Foundation
import PurgeCore
@testable import PurgeEngines
import XCTest

/// `explore --junit FILE`: XML that Python's ElementTree (what CI tools
/// read JUnit with) parses, whatever the messages hold, with a failing
/// test case per group and one passing for the states that passed.
final class ExploreJUnitTests: XCTestCase {
    /// Parses `xml` with python3's ElementTree; returns each testcase as "name|failure message|failure text" and the suite's counts.
    func parse(_ xml: String) throws -> (cases: [String], tests: String, failures: String) {
        let path = NSTemporaryDirectory() + "/explore-junit-\(getpid()).xml"
        try xml.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", """
            import sys, xml.etree.ElementTree as E
            root = E.parse(sys.argv[1]).getroot()
            suite = root.find('testsuite')
            print(suite.get('tests'), suite.get('failures'), sep='\\x1e')
            for case in suite.findall('testcase'):
                failure = case.find('failure')
                print(case.get('name'), '' if failure is None else failure.get('message'), '' if failure is None else failure.text, sep='|', end='\\x1f')
            """, path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, "ElementTree parses it:\n\(xml)")
        let text = String(decoding: data, as: UTF8.self)
        let head = text.prefix { $0 != "\n" }.split(separator: "\u{1E}").map(String.init)
        let cases = text.drop { $0 != "\n" }.dropFirst().split(separator: "\u{1F}").map(String.init).filter { $0 != "\n" }
        return (cases, head.first ?? "", head.dropFirst().first ?? "")
    }

    func failed(_ point: Int, operation: String, message: String, kind: ExploreChecker.Kind = .corruption) -> ExploreChecker.Result {
        ExploreChecker.Result(id: CrashExploration.StateID(point: point, variant: .namesKept), passed: false, stderr: message,
                              failure: ExploreChecker.Failure(operation: operation, lastDurable: nil, lost: ["db: bytes 0-9"], lostCount: 1, kind: kind))
    }

    func testEveryGroupIsAFailingCaseAndThePassedStatesOneCase() throws {
        let nasty = "Error: <malformed> & \"quoted\" 'x'\u{1B}[31m\tend"
        let results = [
            ExploreChecker.Result(id: CrashExploration.StateID(point: 1, variant: .namesKept), passed: true, stderr: "", failure: nil),
            failed(2, operation: "write db & <wal>: bytes 0-9", message: nasty),
            failed(3, operation: "rename a -> b", message: "view matches the start, before the last acknowledged: line 1", kind: .lostAcknowledgment),
            failed(4, operation: "write db & <wal>: bytes 10-19", message: nasty),
        ]
        let report = ExploreReport(container: "/c", command: ["app", "--x=<y>"], check: "check", operations: 4, allStates: 4, chosenStates: 4,
                                   sampled: false, results: results, seconds: 1.25, commandEnded: "exited 0", commandStatus: 0,
                                   fingerprint: "f", torn: false, models: [.ext4])
        let parsed = try parse(ExploreJUnit.xml(report))
        XCTAssertEqual(parsed.tests, "3")
        XCTAssertEqual(parsed.failures, "2")
        XCTAssertEqual(parsed.cases.count, 3, "\(parsed.cases)")
        let first = parsed.cases[0].split(separator: "|", maxSplits: 2).map(String.init)
        XCTAssertEqual(first[0], "group 1 (corruption): write db & <wal>, after nothing durable")
        XCTAssertEqual(first[1], "Error: <malformed> & \"quoted\" 'x'\u{FFFD}[31m\tend", "escaped, and the control character replaced")
        XCTAssertTrue(first[2].hasPrefix("smallest state: 2/names-kept\nstates: 2\n"), first[2])
        XCTAssertTrue(parsed.cases[1].hasPrefix("group 2 (lost-acknowledgment): rename a -> b, after nothing durable|view matches the start"),
                      parsed.cases[1])
        XCTAssertEqual(parsed.cases[2], "1 of 4 crash states passed||")
    }

    func testACommandThatFailedIsAFailingCase() throws {
        let report = ExploreReport(container: "/c", command: ["app"], check: "check", operations: 1, allStates: 1, chosenStates: 1, sampled: false,
                                   results: [ExploreChecker.Result(id: CrashExploration.StateID(point: 1, variant: .namesKept), passed: true,
                                                                   stderr: "", failure: nil)],
                                   seconds: 0, commandEnded: "exited 2", commandStatus: 2, commandStderr: "app: disk full", fingerprint: "f",
                                   torn: false, models: [.ext4])
        let parsed = try parse(ExploreJUnit.xml(report))
        XCTAssertEqual(parsed.tests, "2")
        XCTAssertEqual(parsed.failures, "1")
        XCTAssertEqual(parsed.cases.first, "the command|the command exited 2|app: disk full")
    }
}
