import PurgeCore
import XCTest

/// `--golden`'s reference points: each line of the command's stdout placed
/// after the operations made before it, the live container at each point,
/// and the verdict on a crash state's view.
final class CrashAcknowledgmentsTests: XCTestCase {
    let root = EntryID(device: 1, inode: 2)
    let config = EntryID(device: 1, inode: 10)
    let new = EntryID(device: 1, inode: 11)

    func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// Output "a\nbb\nc" with 2 bytes printed before operation 2 began, 5 before 4, over 4 operations.
    var acknowledgments: CrashAcknowledgments {
        let before: [UInt64] = [0, 2, 2, 5]
        return CrashAcknowledgments(output: bytes("a\nbb\nc"), operationCount: 4) { before[$0] }
    }

    func testEachLineIsPlacedAfterTheOperationsMadeBeforeIt() {
        let acks = acknowledgments
        XCTAssertEqual(acks.lines.map(\.number), [1, 2, 3])
        XCTAssertEqual(acks.lines.map(\.point), [1, 3, 4], "a before operation 2, bb before 4, c (no newline) at the end")
        XCTAssertEqual(acks.referencePoints, [0, 1, 3, 4])
        XCTAssertEqual(acks.acknowledged(outputLength: 0), 0)
        XCTAssertEqual(acks.acknowledged(outputLength: 4), 1, "a line counts once whole")
        XCTAssertEqual(acks.acknowledged(outputLength: 5), 2)
        XCTAssertEqual(acks.outputLength(at: 4), 6, "at the end, everything printed")
        XCTAssertEqual([0, 1, 3, 4].map(acks.name(of:)), ["the start", "line 1", "line 2", "line 3"])
        XCTAssertFalse(acks.looksBlockBuffered)
    }

    func testAViewPassesAtItsLastAcknowledgedPointOrLater() {
        let acks = acknowledgments
        // Crash at point 2: line 1 printed (2 bytes).
        XCTAssertEqual(acks.verdict(matching: [1], outputLength: 2), .passed)
        XCTAssertEqual(acks.verdict(matching: [4], outputLength: 2), .passed, "a later point: the app got further than it said")
        XCTAssertEqual(acks.verdict(matching: [0], outputLength: 2),
                       .lostAcknowledgment("view matches the start, before the last acknowledged: line 1"))
        XCTAssertEqual(acks.verdict(matching: [], outputLength: 2),
                       .noMatch("view matches no acknowledged point; last acknowledged: line 1"))
        XCTAssertEqual(acks.verdict(matching: [0, 1], outputLength: 5),
                       .lostAcknowledgment("view matches line 1, before the last acknowledged: line 2"), "the latest one it matches is named")
        XCTAssertEqual(acks.verdict(matching: [0], outputLength: 0), .passed, "nothing acknowledged yet: the start will do")
        XCTAssertEqual(acks.verdict(matching: [], outputLength: 0),
                       .noMatch("view matches no acknowledged point; last acknowledged: none"))
    }

    func testEveryLineAfterTheLastOperationLooksBlockBuffered() {
        let atExit = CrashAcknowledgments(output: bytes("saved 1\nsaved 2\n"), operationCount: 3) { _ in 0 }
        XCTAssertEqual(atExit.lines.map(\.point), [3, 3])
        XCTAssertTrue(atExit.looksBlockBuffered)
        let one = CrashAcknowledgments(output: bytes("saved\n"), operationCount: 3) { _ in 0 }
        XCTAssertFalse(one.looksBlockBuffered, "one line at the end is what a writer that acknowledges once prints")
        let streamed = CrashAcknowledgments(output: bytes("saved 1\nsaved 2\n"), operationCount: 3) { $0 >= 2 ? 8 : 0 }
        XCTAssertEqual(streamed.lines.map(\.point), [2, 3])
        XCTAssertFalse(streamed.looksBlockBuffered)
        XCTAssertEqual(CrashAcknowledgments(output: [], operationCount: 2) { _ in 0 }.referencePoints, [0, 2])
    }

    /// The live state holds every name and byte, unsynced or not; the crash state at the same point does not.
    func testTheLiveStateHoldsWhatTheCommandSaw() {
        let initial: [CrashExploration.InitialEntry] = [
            .init(path: "", id: root, kind: .directory, mode: 0o755),
            .init(path: "config.json", id: config, kind: .file, mode: 0o644, size: 15),
        ]
        let records: [RecordedOperation] = [
            .created(parent: root, name: bytes("new"), entry: new, kind: .file, mode: 0o644, target: []),
            .write(new, offset: 0, length: 7, data: 0),
            .output(data: 7, length: 6),
            .removed(parent: root, name: bytes("config.json"), entry: config),
        ]
        let exploration = CrashExploration(initial: initial, records: records, model: .xfs)
        var live: [CrashExploration.State] = []
        exploration.forEachLiveState([0, 2, 3]) { live.append($0) }
        XCTAssertEqual(live.map(\.id.point), [0, 2, 3])
        XCTAssertEqual(live[0].entries.map(\.path), ["config.json"])
        XCTAssertEqual(live[1].entries.first { $0.path == "new" }?.image?.size, 7, "the unsynced write is there")
        XCTAssertEqual(live[2].entries.map(\.path), ["new"])
        let crash = exploration.states([CrashExploration.StateID(point: 2, variant: .namesKept)])
        XCTAssertEqual(crash.first?.entries.first { $0.path == "new" }?.image?.size, 0, "the crash state lost it")
        let acks = CrashAcknowledgments(output: bytes("saved\n"), exploration: exploration)
        XCTAssertEqual(acks.lines.map(\.point), [2])
    }

    func testViewsDifferInBytesOrStatus() {
        XCTAssertEqual(CrashView(bytes("{}\n"), status: 0), CrashView(bytes("{}\n"), status: 0))
        XCTAssertNotEqual(CrashView(bytes("{}\n"), status: 0), CrashView(bytes("{}\n"), status: 1))
        XCTAssertNotEqual(CrashView(bytes("ab"), status: 0), CrashView(bytes("ba"), status: 0))
        var folded = CrashView(status: 0)
        folded.fold(bytes("a"))
        folded.fold(bytes("b"))
        XCTAssertEqual(folded, CrashView(bytes("ab"), status: 0))
    }
}
