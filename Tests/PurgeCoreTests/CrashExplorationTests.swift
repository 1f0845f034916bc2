import PurgeCore
import XCTest

/// The crash states of a recorded run: data as of each file's last sync,
/// names at both ends of the range between the last durable one and k,
/// a rename over a name as one operation, the same states in the same order.
final class CrashExplorationTests: XCTestCase {
    let root = EntryID(device: 1, inode: 2)
    let tmp = EntryID(device: 1, inode: 3)
    let config = EntryID(device: 1, inode: 10)
    let new = EntryID(device: 1, inode: 11)

    var initial: [CrashExploration.InitialEntry] {
        [.init(path: "", id: root, kind: .directory, mode: 0o755),
         .init(path: "config.json", id: config, kind: .file, mode: 0o644, size: 15),
         .init(path: "tmp", id: tmp, kind: .directory, mode: 0o755)]
    }

    func name(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// write temp, (fsync it), rename over config.json, (fsync the directory).
    func writer(careful: Bool) -> [RecordedOperation] {
        var records: [RecordedOperation] = [
            .created(parent: tmp, name: name("config.json.new"), entry: new, kind: .file, mode: 0o644, target: []),
            .write(new, offset: 0, length: 15, data: 0),
        ]
        if careful { records.append(.synced(new)) }
        records += [
            .removed(parent: root, name: name("config.json"), entry: config),
            .moved(parent: tmp, name: name("config.json.new"), newParent: root, newName: name("config.json"), entry: new),
        ]
        if careful { records.append(.directorySynced(root)) }
        records.append(.output(data: 15, length: 8))
        return records
    }

    func configEntry(_ state: CrashExploration.State) -> CrashExploration.Entry? {
        state.entries.first { $0.path == "config.json" }
    }

    func testTheLogRoundTrips() {
        for record in writer(careful: true) + [.resize(config, size: 3), .exchanged(parent: root, name: [], newParent: tmp, newName: name("a b"))] {
            XCTAssertEqual(RecordedOperation(line: record.line[...]), record, record.line)
        }
        XCTAssertNil(RecordedOperation(line: "W 1:2 x 3 4"))
        XCTAssertThrowsError(try RecordedOperation.parse("S 1:2\nnonsense\n"))
    }

    /// Found by the parser fuzzing (CommandParserFuzzTests.testReplayRecording): explore
    /// --replay reads the log from a directory the user names, and a write or an output
    /// whose range passes 2^64 trapped on `data + length`. Such a line is no record; output
    /// lengths add up clamped.
    func testARangePast64BitsIsNoRecord() {
        XCTAssertNil(RecordedOperation(line: "W 1:11 0 18446744073709551615 1"))
        XCTAssertNil(RecordedOperation(line: "W 1:11 18446744073709551615 1 0"))
        XCTAssertNil(RecordedOperation(line: "P 18446744073709551615 1"))
        let half = UInt64.max / 2 + 1
        let exploration = CrashExploration(initial: initial, records: [.output(data: 0, length: half), .output(data: 0, length: half),
                                                                        .synced(config)])
        XCTAssertEqual(exploration.outputTotal, .max)
    }

    /// Found by libFuzzer (scripts/fuzz replay-recording): a recording whose initial tree
    /// links a directory under itself (no real tree does) made the namespace's walk recurse
    /// until the stack ran out; a write at the last offset 2^64 can name overflowed the
    /// next page boundary and its description.
    func testADirectoryUnderItselfAndTheLastOffsetMakeStates() {
        let looped = initial + [.init(path: "tmp/again", id: root, kind: .directory, mode: 0o755)]
        let exploration = CrashExploration(initial: looped, records: [.synced(config), .write(config, offset: .max, length: 0, data: 0),
                                                                      .write(config, offset: .max - 1, length: 1, data: 0)])
        let states = exploration.states((1...3).map { CrashExploration.StateID(point: $0, variant: .namesKept) })
        XCTAssertEqual(states.count, 3)
        XCTAssertEqual(states[2].operation, "write config.json: bytes 18446744073709551614-18446744073709551614")
    }

    func testARenameOverANameIsOneOperationAndTheCarelessOneLeavesAnEmptyFile() {
        let exploration = CrashExploration(initial: initial, records: writer(careful: false))
        XCTAssertEqual(exploration.operationCount, 3, "create, write, rename over")
        let ids = exploration.stateIDs(torn: false)
        XCTAssertEqual(ids.map(\.description), ["1/names-kept", "1/names-lost", "2/names-kept", "2/names-lost", "3/names-kept", "3/names-lost"])
        let states = exploration.states(ids)
        let afterRename = states[4]
        XCTAssertEqual(afterRename.operation, "rename tmp/config.json.new -> config.json")
        XCTAssertNil(afterRename.lastDurable)
        XCTAssertEqual(configEntry(afterRename)?.identity, new, "the new name persisted")
        XCTAssertEqual(configEntry(afterRename)?.image, .empty, "its data did not: delayed allocation")
        XCTAssertEqual(afterRename.lost, ["config.json: bytes 0-14"])
        let namesLost = states[5]
        XCTAssertEqual(configEntry(namesLost)?.identity, config, "no name was durable: the old file")
        XCTAssertEqual(configEntry(namesLost)?.image, .base("config.json", size: 15))
        XCTAssertFalse(namesLost.entries.contains { $0.path == "tmp/config.json.new" })
        XCTAssertEqual(namesLost.lost.prefix(2), ["name tmp/config.json.new", "rename tmp/config.json.new -> config.json"])
    }

    func testTheCarefulWriterHasTheOldOrTheNewFileWhole() {
        let exploration = CrashExploration(initial: initial, records: writer(careful: true))
        XCTAssertEqual(exploration.operationCount, 5)
        let states = exploration.states(exploration.stateIDs(torn: false))
        for state in states {
            let entry = configEntry(state)
            XCTAssertTrue(entry?.image == .base("config.json", size: 15)
                          || entry?.image == FileImage(origin: nil, originLength: 0, pieces: [.init(offset: 0, length: 15, data: 0)], size: 15),
                          "\(state.id): \(String(describing: entry))")
        }
        let last = states.last!
        XCTAssertEqual(last.id.description, "5/names-kept", "after the directory's sync nothing is undurable: one state")
        XCTAssertEqual(last.lastDurable?.text, "fsync tmp/config.json.new")
        XCTAssertEqual(last.operation, "fsync directory .")
        XCTAssertEqual(exploration.outputLength(at: 5), 8, "what was printed after the last operation counts at the last point")
        XCTAssertEqual(exploration.outputLength(at: 4), 0)
    }

    func testADirectorySyncMakesEveryEarlierNameDurable() {
        let a = EntryID(device: 1, inode: 20), b = EntryID(device: 1, inode: 21)
        let records: [RecordedOperation] = [
            .created(parent: tmp, name: name("a"), entry: a, kind: .file, mode: 0o600, target: []),
            .created(parent: root, name: name("b"), entry: b, kind: .file, mode: 0o600, target: []),
            .directorySynced(root),
            .created(parent: tmp, name: name("c"), entry: EntryID(device: 1, inode: 22), kind: .file, mode: 0o600, target: []),
        ]
        let exploration = CrashExploration(initial: initial, records: records)
        let states = exploration.states(exploration.stateIDs(torn: false))
        XCTAssertEqual(states.map(\.id.description), ["1/names-kept", "1/names-lost", "2/names-kept", "2/names-lost", "3/names-kept",
                                                       "4/names-kept", "4/names-lost"])
        let lostAtFour = states[6]
        XCTAssertEqual(Set(lostAtFour.entries.map(\.path)), ["config.json", "tmp", "tmp/a", "b"], "a's create came first: committed with b's")
    }

    func testUnsyncedWritesAreLostAndTornStatesKeepPagesInOrder() {
        let records: [RecordedOperation] = [
            .write(config, offset: 0, length: 8192, data: 0),
            .synced(config),
            .write(config, offset: 4000, length: 200, data: 8192),
        ]
        let exploration = CrashExploration(initial: initial, records: records)
        let ids = exploration.stateIDs(torn: true)
        XCTAssertEqual(ids.map(\.description), ["1/names-kept", "1/torn-1", "1/torn-2", "2/names-kept", "3/names-kept", "3/torn-1", "3/torn-2"])
        let states = exploration.states(ids)
        XCTAssertEqual(configEntry(states[0])?.image, .base("config.json", size: 15))
        XCTAssertEqual(states[0].lost, ["config.json: bytes 0-8191"])
        XCTAssertEqual(configEntry(states[1])?.image?.size, 4096, "one page of the two")
        XCTAssertEqual(configEntry(states[4])?.image?.pieces.count, 1, "the synced write only")
        XCTAssertEqual(configEntry(states[5])?.image?.pieces.last, .init(offset: 4000, length: 96, data: 8192), "up to the page's end")
        XCTAssertEqual(states[4].lastDurable?.text, "fsync config.json")
    }

    func testTheSameRecordsGiveTheSameStatesAndSamplingIsEven() {
        let one = CrashExploration(initial: initial, records: writer(careful: true))
        let two = CrashExploration(initial: initial, records: writer(careful: true))
        XCTAssertEqual(one.stateIDs(torn: true), two.stateIDs(torn: true))
        XCTAssertEqual(one.states(one.stateIDs(torn: false)).map(\.entries), two.states(two.stateIDs(torn: false)).map(\.entries))
        let ids = (1...10).map { CrashExploration.StateID(point: $0, variant: .namesKept) }
        XCTAssertEqual(CrashExploration.sample(ids, limit: 4).map(\.point), [1, 4, 7, 10])
        XCTAssertEqual(CrashExploration.sample(ids, limit: 20), ids)
        XCTAssertEqual(CrashExploration.StateID("12/names-lost"), .init(point: 12, variant: .namesLost))
        XCTAssertNil(CrashExploration.StateID("0"))
    }

    /// A log written before the recorder kept a rename's two lines together
    /// may have the command's output between them: still one rename, and
    /// that output counts as printed after it (it was drained after
    /// rename(2) returned).
    func testOutputBetweenARemovalAndItsMoveLeavesOneRename() {
        var records = writer(careful: true)
        let move = records.firstIndex { if case .moved = $0 { return true } else { return false } }!
        records.insert(.output(data: 23, length: 4), at: move)
        let exploration = CrashExploration(initial: initial, records: records)
        XCTAssertEqual(exploration.operationCount, 5, "create, write, fsync, rename over, fsync of the directory")
        let states = exploration.states(exploration.stateIDs(torn: false))
        XCTAssertFalse(states.isEmpty)
        for state in states {
            XCTAssertNotNil(configEntry(state), "\(state.id): config.json never goes missing")
        }
        let rename = states.first { $0.id.point == 4 }
        XCTAssertEqual(rename?.operation, "rename tmp/config.json.new -> config.json")
        XCTAssertEqual(exploration.outputLength(at: 3), 0, "nothing printed before the rename")
        XCTAssertEqual(exploration.outputLength(at: 4), 4, "what was drained between the two lines came after it")
        XCTAssertEqual(exploration.outputTotal, 12)
        XCTAssertEqual(exploration.dataNeeded, 27)
    }

    func testATruncateCutsWhatLayPastIt() {
        var image = FileImage.base("f", size: 100)
        image.write(.init(offset: 90, length: 20, data: 0))
        image.resize(to: 50)
        image.resize(to: 120)
        XCTAssertEqual(image, FileImage(origin: "f", originLength: 50, pieces: [], size: 120))
    }
}

extension CrashExplorationTests {
    /// ext4 gives a file made after another's removal its inode number: the
    /// new file is still empty until synced, and the old one keeps its data
    /// where its name was not durably removed.
    func testAReusedInodeNumberIsAnotherFile() {
        let records: [RecordedOperation] = [
            .removed(parent: root, name: name("config.json"), entry: config),
            .created(parent: root, name: name("config.json"), entry: config, kind: .file, mode: 0o644, target: []),
        ]
        let exploration = CrashExploration(initial: initial, records: records)
        let states = exploration.states(exploration.stateIDs(torn: false))
        XCTAssertEqual(states.map(\.id.description), ["1/names-kept", "1/names-lost", "2/names-kept", "2/names-lost"])
        XCTAssertEqual(configEntry(states[2])?.image, .empty, "the new file, never synced")
        XCTAssertNotEqual(configEntry(states[2])?.identity, config)
        XCTAssertEqual(configEntry(states[3])?.image, .base("config.json", size: 15), "the old file, its removal not durable")
    }
}
