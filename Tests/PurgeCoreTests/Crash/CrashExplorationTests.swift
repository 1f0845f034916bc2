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
        let exploration = CrashExploration(initial: initial, records: writer(careful: false), model: .xfs)
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

    /// A state's loss is listed up to the limit and counted in full, so a
    /// report over thousands of failed states stays linear in the run: 30
    /// unsynced new files, 10 of them named, 30 counted, the same first 10.
    func testWhatAStateLostIsCappedAndCounted() {
        var records: [RecordedOperation] = []
        for index in 0..<30 {
            let entry = EntryID(device: 1, inode: UInt64(100 + index))
            records += [.created(parent: tmp, name: name("f\(index)"), entry: entry, kind: .file, mode: 0o644, target: []),
                        .write(entry, offset: 0, length: 5, data: UInt64(index * 5))]
        }
        let exploration = CrashExploration(initial: initial, records: records)
        let last = [CrashExploration.StateID(point: 60, variant: .namesKept), CrashExploration.StateID(point: 60, variant: .namesLost)]
        let whole = exploration.states(last)
        var capped = exploration.stateIterator(last, lostLimit: 10)
        for state in whole {
            let one = try? XCTUnwrap(capped.next())
            XCTAssertEqual(one?.id, state.id)
            XCTAssertEqual(one?.lost.count, 10, "\(state.id)")
            XCTAssertEqual(one?.lostCount, state.lost.count, "\(state.id)")
            XCTAssertEqual(one?.lost, Array(state.lost.prefix(10)), "\(state.id)")
            XCTAssertEqual(one?.entries, state.entries)
        }
        XCTAssertEqual(whole.map(\.lostCount), [30, 60], "30 files' data; and their 30 names with them")
        XCTAssertNil(capped.next())
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
        XCTAssertEqual(states[1].lost.last, "(survived: the first 1 of 2 unsynced pages, the last of them config.json bytes 0-4095; lost: the 1 after it)")
        XCTAssertEqual(states[2].lost.last, "(survived: the first 2 of 2 unsynced pages, the last of them config.json bytes 4096-8191)")
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

/// Where the models differ: each case gives different states under
/// different models, as their sources say.
extension CrashExplorationTests {
    func states(_ records: [RecordedOperation], _ model: CrashFilesystemModel, torn: Bool = false) -> [CrashExploration.State] {
        let exploration = CrashExploration(initial: initial, records: records, model: model)
        return exploration.states(exploration.stateIDs(torn: torn))
    }

    /// The careless writer renames over config.json without an fsync:
    /// an empty config.json under xfs, noauto_da_alloc, btrfs and posix;
    /// never under ext4, whose auto_da_alloc writes the data first.
    func testARenameOverANameWithoutFsyncEmptiesTheFileExceptOnExt4() {
        let newData = FileImage(origin: nil, originLength: 0, pieces: [.init(offset: 0, length: 15, data: 0)], size: 15)
        for model in CrashFilesystemModel.allCases {
            let all = states(writer(careful: false), model)
            let images = all.compactMap { configEntry($0)?.image }
            XCTAssertEqual(images.count, all.count, "\(model): config.json is always there")
            if model == .ext4 {
                XCTAssertTrue(images.allSatisfy { $0 == .base("config.json", size: 15) || $0 == newData }, "\(model): old or new, whole: \(images)")
                let afterRename = all.first { $0.id.description == "3/names-kept" }
                XCTAssertEqual(afterRename.flatMap(configEntry)?.image, newData)
                XCTAssertEqual(afterRename?.lost, [], "nothing lost: the data went with the rename")
            } else {
                XCTAssertTrue(images.contains(.empty), "\(model): the renamed file without its data")
            }
        }
    }

    /// Data written after a rename over a name is not flushed by it.
    func testExt4FlushesOnlyWhatWasWrittenBeforeTheRename() {
        var records = writer(careful: false)
        records.removeLast()
        records.append(.write(new, offset: 15, length: 5, data: 23))
        let last = states(records, .ext4).last { $0.id.variant == .namesKept }
        XCTAssertEqual(last.flatMap(configEntry)?.image?.size, 15, "the later bytes are lost")
        XCTAssertEqual(last?.lost, ["config.json: bytes 15-19"])
    }

    /// Payload then marker, two files overwritten in place, never synced:
    /// only posix lets the marker survive without the payload.
    func testAMarkerWithoutItsPayloadIsFoundUnderPosixOnly() {
        let payload = EntryID(device: 1, inode: 30), marker = EntryID(device: 1, inode: 31)
        let files: [CrashExploration.InitialEntry] = initial + [.init(path: "payload", id: payload, kind: .file, mode: 0o644, size: 4096),
                                                                .init(path: "marker", id: marker, kind: .file, mode: 0o644, size: 1)]
        let records: [RecordedOperation] = [.write(payload, offset: 0, length: 4096, data: 0), .write(marker, offset: 0, length: 1, data: 4096)]
        for model in CrashFilesystemModel.allCases {
            for torn in [false, true] {
                let exploration = CrashExploration(initial: files, records: records, model: model)
                let found = exploration.states(exploration.stateIDs(torn: torn)).filter { state in
                    let image = { (path: String) in state.entries.first { $0.path == path }?.image }
                    return image("marker") != .base("marker", size: 1) && image("payload") == .base("payload", size: 4096)
                }
                XCTAssertEqual(found.map(\.id.description), model == .posix ? ["2/reordered-2"] : [], "\(model), torn \(torn)")
            }
        }
    }

    /// An fsync of a new file, its directory never synced: the name goes
    /// with it under ext4, xfs and btrfs (the journal or the log tree up to
    /// the file's last change), not under posix.
    func testAnFsyncOfANewFileKeepsItsNameExceptUnderPosix() {
        let records: [RecordedOperation] = [
            .created(parent: root, name: name("new"), entry: new, kind: .file, mode: 0o644, target: []),
            .write(new, offset: 0, length: 15, data: 0),
            .synced(new),
        ]
        for model in CrashFilesystemModel.allCases {
            let afterSync = states(records, model).filter { $0.id.point == 3 }
            let lost = afterSync.filter { state in !state.entries.contains { $0.path == "new" } }
            XCTAssertEqual(lost.map(\.id.description), model == .posix ? ["3/names-lost"] : [], "\(model)")
        }
    }

    /// A truncate is metadata: it persists with the names, without the
    /// data written after it.
    func testATruncateWithoutItsRewriteIsAState() {
        let records: [RecordedOperation] = [.resize(config, size: 0), .write(config, offset: 0, length: 15, data: 0)]
        for model in CrashFilesystemModel.allCases {
            let all = states(records, model)
            XCTAssertTrue(all.contains { configEntry($0)?.image?.size == 0 }, "\(model): emptied, the rewrite lost")
            XCTAssertTrue(all.contains { configEntry($0)?.image == .base("config.json", size: 15) }, "\(model): the truncate not committed")
        }
    }

    /// Each state once, labelled with every model that leaves it.
    func testAllModelsLabelEachStateOnce() {
        let explorations = CrashFilesystemModel.allCases.map { CrashExploration(initial: initial, records: writer(careful: false), model: $0) }
        let ids = CrashExploration.unionIDs(explorations, torn: false)
        XCTAssertEqual(ids.map(\.description), ["1/names-kept", "1/names-lost", "2/names-kept", "2/names-lost", "3/names-kept", "3/names-lost"])
        let labelled = CrashExploration.labelled(explorations, ids: ids)
        let afterRename = labelled.filter { $0.state.id.description == "3/names-kept" }
        XCTAssertEqual(afterRename.map(\.models), [[.ext4], [.ext4NoAutoDaAlloc, .xfs, .btrfs, .posix]], "two trees: with and without the data")
        XCTAssertEqual(labelled.filter { $0.state.id.description == "1/names-kept" }.map(\.models), [CrashFilesystemModel.allCases])
        XCTAssertEqual(CrashFilesystemModel.list("all"), CrashFilesystemModel.allCases)
        XCTAssertEqual(CrashFilesystemModel.list("xfs,posix,xfs"), [.xfs, .posix])
        XCTAssertNil(CrashFilesystemModel.list("ext3"))
        XCTAssertEqual(CrashFilesystemModel.sentence([.posix, .xfs, .ext4]), "posix, xfs and ext4")
        XCTAssertEqual(CrashExploration.StateID("4/reordered-3"), .init(point: 4, variant: .reordered(page: 3)))
    }

    /// Under several models the states are made one id at a time, as the
    /// checker asks for them: the count starts at one state an id and grows
    /// by each split, and the sequence is the one model's where there is one.
    func testTheLabelledStatesAreMadeOneIdAtATime() throws {
        let explorations = CrashFilesystemModel.allCases.map { CrashExploration(initial: initial, records: writer(careful: false), model: $0) }
        let ids = CrashExploration.unionIDs(explorations, torn: false)
        var iterator = CrashExploration.labelledIterator(explorations, ids: ids, lostLimit: 1)
        XCTAssertEqual(iterator.expected, ids.count)
        XCTAssertEqual(iterator.upcoming, ids.first)
        var made: [String] = []
        while let (state, models) = iterator.next() {
            XCTAssertEqual(state.id, ids[iterator.position], "the id the position names")
            XCTAssertLessThanOrEqual(state.lost.count, 1, "the lost limit reaches every model")
            made.append("\(state.id) \(models.count)")
        }
        XCTAssertEqual(made, ["1/names-kept 5", "1/names-lost 5", "2/names-kept 5", "2/names-lost 5", "3/names-kept 1", "3/names-kept 4", "3/names-lost 5"])
        XCTAssertEqual(iterator.expected, 7, "six ids, one of them split in two")
        XCTAssertNil(iterator.upcoming)
        let one = CrashExploration.labelled([explorations[2]], ids: ids)
        XCTAssertEqual(one.map(\.state.id), explorations[2].states(ids).map(\.id))
        XCTAssertTrue(one.allSatisfy { $0.models == [.xfs] })
    }
}
