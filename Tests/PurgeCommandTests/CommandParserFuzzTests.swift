import FuzzHarness
import XCTest

/// The fast slice of the fuzzing of PurgeCommand's parsers of user input
/// (reports given to `purgefs report` and `explore --replay`, the recording
/// beside them, the ui's request heads): as ParserFuzzTests does for PurgeCore's.
final class CommandParserFuzzTests: XCTestCase {
    func fuzz(_ target: ParserFuzzTarget, seed: UInt64 = 1, inputs: Int = 2000) throws {
        let failures = try target.seededRun(seed: seed, count: inputs)
        XCTAssertEqual(failures.count, 0, failures.prefix(5).joined(separator: "\n"))
    }

    func testReport() throws { try fuzz(.report) }
    func testReplayRecording() throws { try fuzz(.replayRecording) }
    func testUIRequest() throws { try fuzz(.uiRequest) }

    /// Inputs libFuzzer found (scripts/fuzz), each once a crash; they are in
    /// Tests/FuzzCorpus too, so both runners start from them.
    func testFoundInputs() throws {
        // An initial tree where "tmp" has the root's identity: the directory under
        // itself made the walk of the namespace recurse until the stack ran out.
        let directoryUnderItself = try FuzzCorpus.seeds(.replayRecording, named: "found-directory-under-itself")
        XCTAssertNil(ParserFuzzTarget.replayRecording.check(directoryUnderItself))
    }
}
