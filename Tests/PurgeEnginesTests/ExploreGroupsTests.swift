import Foundation
import PurgeCore
@testable import PurgeEngines
import XCTest

/// explore's report groups failed states by operation (a write's range
/// left out), last durable operation and message, corruption-like first,
/// and shows every group with its count and smallest state.
final class ExploreGroupsTests: XCTestCase {
    func result(_ point: Int, _ variant: CrashExploration.Variant = .namesKept, operation: String, durable: Int? = nil, message: String,
                lost: Int = 1, kind: ExploreChecker.Kind = .corruption) -> ExploreChecker.Result {
        ExploreChecker.Result(id: CrashExploration.StateID(point: point, variant: variant), passed: false, stderr: message,
                              failure: ExploreChecker.Failure(operation: operation, lastDurable: durable.map { ($0, "fsync db (\($0))") },
                                                              lost: (0..<min(lost, 10)).map { "item \($0)" }, lostCount: lost, kind: kind))
    }

    var results: [ExploreChecker.Result] {
        [
            result(2, operation: "write db: bytes 0-4095", message: "view matches the start, before the last acknowledged: line 1", lost: 3,
                   kind: .lostAcknowledgment),
            result(3, operation: "write db: bytes 4096-8191", message: "view matches the start, before the last acknowledged: line 1", lost: 1,
                   kind: .lostAcknowledgment),
            ExploreChecker.Result(id: CrashExploration.StateID(point: 4, variant: .namesKept), passed: true, stderr: "", failure: nil),
            result(5, operation: "write db: bytes 0-4095", durable: 4, message: "database disk image is malformed", lost: 7),
            result(5, .torn(pages: 1), operation: "write db: bytes 0-4095", durable: 4, message: "database disk image is malformed", lost: 2),
            result(6, operation: "write db: bytes 0-4095", durable: 4, message: "view matches no acknowledged point; last acknowledged: line 1"),
        ]
    }

    func testGroupsByOperationDurableAndMessageCorruptionFirst() {
        let grouped = ExploreGroups(results)
        XCTAssertEqual(grouped.groups.map(\.kind), [.corruption, .corruption, .lostAcknowledgment])
        XCTAssertEqual(grouped.groups.map(\.members), [[3, 4], [5], [0, 1]], "a write's byte range does not split a group")
        XCTAssertEqual(grouped.groups.map(\.operation), ["write db", "write db", "write db"])
        XCTAssertEqual(grouped.groups.map(\.smallest), [4, 5, 1], "the state that lost least")
        XCTAssertEqual(grouped.numbers, [3: 1, 4: 1, 5: 2, 0: 3, 1: 3])
    }

    func testTheTextShowsEveryGroupWithItsCountAndSmallestState() throws {
        let report = ExploreReport(container: "/c", command: ["app"], check: "check", operations: 6, allStates: 6, chosenStates: 6, sampled: false,
                                   results: results, seconds: 1, commandEnded: "exited 0", commandStatus: 0, fingerprint: "f", torn: true,
                                   models: [.ext4])
        let text = report.text(shown: 1)
        XCTAssertTrue(text.contains("  group 1, corruption: 2 states, smallest 5/torn-1\n"), text)
        XCTAssertTrue(text.contains("  group 2, corruption: 1 state, smallest 6/names-kept\n"), text)
        XCTAssertTrue(text.contains("  group 3, lost acknowledgment: 2 states, smallest 3/names-kept\n"), text)
        XCTAssertTrue(text.contains("    message:      database disk image is malformed\n"), text)
        XCTAssertLessThan(try XCTUnwrap(text.range(of: "Groups (")).lowerBound, try XCTUnwrap(text.range(of: "Failed states")).lowerBound,
                          "the groups lead")
        let groups = try XCTUnwrap(report.json["groups"]?.arrayValue)
        XCTAssertEqual(groups.count, 3)
        XCTAssertEqual(groups[0]["smallest"]?.stringValue, "5/torn-1")
        XCTAssertEqual(groups[0]["count"], .integer(2))
        XCTAssertEqual(groups[2]["kind"]?.stringValue, "lost-acknowledgment")
        XCTAssertEqual(groups[0]["models"], .array([.string("ext4")]))
        let failures = try XCTUnwrap(report.json["failures"]?.arrayValue)
        XCTAssertEqual(failures.map { $0["group"] }, [.integer(3), .integer(3), .integer(1), .integer(1), .integer(2)])
    }
}
