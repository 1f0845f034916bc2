import PurgeCore
import XCTest

final class ScenarioTests: XCTestCase {
    private func parse(_ text: String) throws -> Scenario {
        try Scenario(parsing: text, file: "s.txt")
    }

    private func problem(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> ScenarioError? {
        do throws(ScenarioError) {
            _ = try Scenario(parsing: text, file: "s.txt")
            XCTFail("parsed: \(text)", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    /// Found by the parser fuzzing (ParserFuzzTests.testScenario): lines were split by
    /// Character, and "\r\n" is one, so a scenario saved with CRLF line ends was one line.
    func testCRLFLineEndsReadAsLines() throws {
        let text = "at 2s squeeze 5M\r\n# a comment\r\nwhen used > 90% purge all\r\n"
        XCTAssertEqual(try Scenario(parsing: text, file: "s"), try Scenario(parsing: text.replacingOccurrences(of: "\r\n", with: "\n"), file: "s"))
        XCTAssertEqual(try Scenario(parsing: text, file: "s").steps.count, 2)
    }

    /// A quote followed by a combining mark opens a quote (words are read by scalar).
    func testAQuoteBeforeACombiningMarkIsAQuote() throws {
        let scenario = try Scenario(parsing: "at 1s pin '\u{301}a b'\n", file: "s")
        XCTAssertEqual(scenario.steps.first?.action, .pin("\u{301}a b"))
    }

    func testTheSpecExample() throws {
        let scenario = try parse("""
            # squeeze, then a fault once the database exists
            at 2s squeeze 5M
            when file Documents/app.sqlite exists timeout 30s  fault --op fsync --path 'Documents/*' --errno EIO --times 1

            when used > 90% purge all   # the rest
            """)
        XCTAssertEqual(scenario.steps, [
            ScenarioStep(line: 2, trigger: .at(Milliseconds(2_000)), action: .squeeze(5 << 20)),
            ScenarioStep(line: 3, trigger: .fileExists("Documents/app.sqlite"), timeout: Milliseconds(30_000),
                         action: .fault(["--op", "fsync", "--path", "Documents/*", "--errno", "EIO", "--times", "1"])),
            ScenarioStep(line: 5, trigger: .usedAbove(.percent(90)), action: .purge(nil)),
        ])
    }

    func testEveryTriggerAndAction() throws {
        let scenario = try parse("""
            at 500ms external 1.5G
            at 0 capacity 64M
            when available < 1M timeout 1m purge 2M
            when used > 10M pin "Library/Caches/keep me"
            when file ./tmp//x exists unpin Library/Caches/keep\\ me
            at 1h crash
            at 2h restart
            """)
        XCTAssertEqual(scenario.steps.map(\.trigger), [
            .at(Milliseconds(500)), .at(Milliseconds(0)), .availableBelow(1 << 20), .usedAbove(.bytes(10 << 20)),
            .fileExists("tmp/x"), .at(Milliseconds(3_600_000)), .at(Milliseconds(7_200_000)),
        ])
        XCTAssertEqual(scenario.steps.map(\.action), [
            .external(3 << 29), .capacity(64 << 20), .purge(2 << 20), .pin("Library/Caches/keep me"),
            .unpin("Library/Caches/keep me"), .crash, .restart,
        ])
        XCTAssertTrue(scenario.restarts(after: 5))
        XCTAssertFalse(scenario.restarts(after: 6))
        XCTAssertEqual(scenario.steps[2].timeout, Milliseconds(60_000))
        XCTAssertEqual(scenario.steps[2].description, "when available < 1 MiB timeout 1m purge 2 MiB")
    }

    func testAnEmptyScenarioHasNoSteps() throws {
        XCTAssertEqual(try parse("\n# nothing\n   \n").steps, [])
    }

    func testErrorsNameTheFileAndLine() {
        XCTAssertEqual(problem("at 1s squeeze 5M\nat 2s explode")?.description,
                       "s.txt:2: unknown action 'explode' (squeeze, external, capacity, purge, pin, unpin, fault, crash, restart, cloud)")
        XCTAssertEqual(problem("at 1s cloud frob")?.description,
                       "s.txt:1: unknown action 'cloud frob' (cloud offline, cloud online, cloud touch PATH)")
        XCTAssertEqual(problem("\n\nsoon squeeze 1M")?.line, 3)
        XCTAssertEqual(problem("soon squeeze 1M")?.problem, .unknownTrigger("soon"))
        XCTAssertEqual(problem("when full purge all")?.problem, .unknownCondition("full"))
    }

    func testBadSizesAndDurations() {
        XCTAssertEqual(problem("at 1s squeeze 5Q")?.description,
                       "s.txt:1: squeeze 5Q: not a size (bytes, or a number with K, M, G or T)")
        XCTAssertEqual(problem("at 1s capacity 0")?.problem, .badValue(what: "capacity", value: "0", reason: .zero))
        XCTAssertEqual(problem("at 1s purge 0")?.problem, .badValue(what: "purge", value: "0", reason: .zero))
        XCTAssertEqual(problem("at soon crash")?.problem, .badValue(what: "at", value: "soon", reason: .notADuration))
        XCTAssertEqual(problem("at -1s crash")?.problem, .badValue(what: "at", value: "-1s", reason: .negative))
        XCTAssertEqual(problem("when used > 150% crash")?.problem,
                       .badValue(what: "when used >", value: "150%", reason: .percentOutOfRange))
        XCTAssertEqual(problem("when available < 5% crash")?.problem,
                       .badValue(what: "when available <", value: "5%", reason: .notASize))
        XCTAssertEqual(problem("when available < 1M timeout 0s crash")?.problem,
                       .badValue(what: "timeout", value: "0s", reason: .zero))
    }

    func testMalformedLines() {
        XCTAssertEqual(problem("at 1s timeout 5s crash")?.problem, .timeoutWithAt)
        XCTAssertEqual(problem("when used 5M crash")?.problem, .expected(">", after: "when used", got: "5M"))
        XCTAssertEqual(problem("when file a.txt crash")?.problem, .expected("exists", after: "when file PATH", got: "crash"))
        XCTAssertEqual(problem("when file /etc/passwd exists crash")?.problem, .badPath("/etc/passwd", .absolute))
        XCTAssertEqual(problem("at 1s pin ../x")?.problem, .badPath("../x", .parentReference))
        XCTAssertEqual(problem("at 1s crash now")?.problem, .unexpected("now"))
        XCTAssertEqual(problem("at 1s")?.problem, .missing("an action (squeeze, external, capacity, purge, pin, unpin, fault, crash, restart, cloud)"))
        XCTAssertEqual(problem("at 1s fault")?.problem,
                       .missing("the rule after fault (as purgefs fault add takes it, without MOUNTPOINT)"))
        XCTAssertEqual(problem("at 1s pin 'a b")?.problem, .unclosedQuote)
        XCTAssertEqual(problem("when available < 1M timeout")?.problem, .missing("a DURATION after timeout"))
    }

    func testMilliseconds() throws {
        XCTAssertEqual(try Milliseconds(parsing: "1.5s", allowZero: false).value, 1_500)
        XCTAssertEqual(try Milliseconds(parsing: "90", allowZero: false).value, 90_000)
        XCTAssertEqual(Milliseconds(250).description, "250ms")
        XCTAssertEqual(Milliseconds(120_000).description, "2m")
        XCTAssertThrowsError(try Milliseconds(parsing: "2d", allowZero: false))
    }
}

/// The network's steps: `cloud offline`, `cloud online`, `cloud touch PATH`, and faults on the cloud's calls.
final class ScenarioCloudTests: XCTestCase {
    func testCloudSteps() throws {
        let scenario = try Scenario(parsing: """
            at 2s fault --op download --path '**' --errno EIO
            at 5s cloud offline
            at 9s cloud online
            at 10s cloud touch Documents/a.txt
            """, file: "s.txt")
        XCTAssertEqual(scenario.steps.map(\.action), [
            .fault(["--op", "download", "--path", "**", "--errno", "EIO"]), .cloud("offline", path: nil),
            .cloud("online", path: nil), .cloud("touch", path: "Documents/a.txt"),
        ])
        XCTAssertEqual(scenario.steps[1].action.description, "cloud offline")
        for bad in ["at 1s cloud", "at 1s cloud sideways", "at 1s cloud touch", "at 1s cloud offline now"] {
            XCTAssertThrowsError(try Scenario(parsing: bad, file: "s.txt"), bad)
        }
    }

    func testCloudFaultRules() throws {
        let offline = try FaultRule(arguments: ["--op", "upload", "--path", "Documents/**", "--offline"])
        XCTAssertEqual(offline.action, .offline)
        XCTAssertEqual(offline.arguments, ["--op", "upload", "--path", "Documents/**", "--offline"])
        XCTAssertEqual(try FaultRule(arguments: ["--op", "remote-list", "--path", "**", "--delay", "2s"]).operation, .remoteList)
        for bad in [["--op", "write", "--path", "**", "--offline"], ["--op", "download", "--path", "**", "--short-write"],
                    ["--op", "download", "--path", "**", "--errno", "EIO", "--pid", "12"],
                    ["--op", "upload", "--path", "**", "--offline", "--offline"]] {
            XCTAssertThrowsError(try FaultRule(arguments: bad), "\(bad)")
        }
        // `any` is every request of the mount, not the cloud tier's own calls.
        XCTAssertFalse(FaultCallOperations(.upload).match(.any))
        XCTAssertTrue(FaultCallOperations(.write).match(.any))
        XCTAssertTrue(FaultCallOperations(.download).match(.download))
    }
}
