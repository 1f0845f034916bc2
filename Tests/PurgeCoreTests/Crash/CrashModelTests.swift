import PurgeCore
import XCTest

/// What a crash undoes: data since the last sync (saved once per byte, before
/// its first change), names since the journal's last commit, newest first.
final class CrashModelTests: XCTestCase {
    let file = EntryID(device: 1, inode: 10)
    let dir = EntryID(device: 1, inode: 2)
    let other = EntryID(device: 1, inode: 3)

    func place(_ parent: EntryID, _ name: String) -> Place { Place(parent: parent, name: Array(name.utf8)) }

    /// Applies the saved ranges to `current` the way the adapter restores a file.
    func restore(_ record: UnsyncedFile, undo: [UInt8], current: [UInt8]) -> [UInt8] {
        var bytes = current
        for piece in record.saved {
            let end = Int(piece.end)
            if bytes.count < end { bytes += [UInt8](repeating: 0, count: end - bytes.count) }
            bytes.replaceSubrange(Int(piece.offset)..<end, with: undo[Int(piece.undoOffset)..<Int(piece.undoOffset + piece.length)])
        }
        return Array(bytes.prefix(Int(record.syncedSize)))
    }

    func testEachByteOfTheSyncedVersionIsSavedOnceBeforeItsFirstChange() {
        var model = CrashModel()
        let first = model.claim(file, .overwrite(offset: 10, length: 20), currentSize: 100)
        XCTAssertTrue(first.isNew)
        XCTAssertEqual(first.pieces.map { [$0.offset, $0.length, $0.undoOffset] }, [[10, 20, 0]])
        let second = model.claim(file, .overwrite(offset: 0, length: 50), currentSize: 100)
        XCTAssertFalse(second.isNew)
        XCTAssertEqual(second.pieces.map { [$0.offset, $0.length, $0.undoOffset] }, [[0, 10, 20], [30, 20, 30]],
                       "only the gaps around what is saved already, appended to the undo file")
        XCTAssertEqual(model.claim(file, .overwrite(offset: 100, length: 4096), currentSize: 150).pieces, [],
                       "an append changes nothing of the synced version")
        XCTAssertEqual(model.files[file]?.syncedSize, 100, "the size at the sync, not the size now")
    }

    func testATruncateSavesWhatItCutsAndRestoringGivesTheSyncedVersion() {
        var model = CrashModel()
        let synced: [UInt8] = (0..<100).map { UInt8($0) }
        var current = synced
        var undo: [UInt8] = []
        func change(_ change: DataChange, _ apply: (inout [UInt8]) -> Void) {
            for piece in model.claim(file, change, currentSize: UInt64(current.count)).pieces {
                XCTAssertEqual(undo.count, Int(piece.undoOffset))
                undo += current[Int(piece.offset)..<Int(piece.end)]
            }
            apply(&current)
        }
        change(.resize(to: 10)) { $0.removeLast(90) }
        change(.resize(to: 200)) { $0 += [UInt8](repeating: 0, count: 190) }
        change(.overwrite(offset: 5, length: 100)) { $0.replaceSubrange(5..<105, with: [UInt8](repeating: 0xEE, count: 100)) }
        XCTAssertEqual(undo.count, 95, "each changed byte of the synced version saved once (0..<5 never changed)")
        XCTAssertEqual(restore(model.files[file]!, undo: undo, current: current), synced)
        XCTAssertTrue(model.synced(file))
        XCTAssertFalse(model.isTracked(file), "a sync drops the record")
        XCTAssertFalse(model.synced(file))
    }

    func testAShiftSavesEverythingFromItsOffsetAndAllocatingNothing() {
        var model = CrashModel()
        XCTAssertEqual(model.claim(file, .allocate, currentSize: 50).pieces, [])
        XCTAssertEqual(model.claim(file, .shift(from: 20), currentSize: 50).pieces.map { [$0.offset, $0.length] }, [[20, 30]])
        XCTAssertEqual(model.claim(file, .resize(to: 0), currentSize: 50).pieces.map { [$0.offset, $0.length] }, [[0, 20]])
    }

    func testANewFileIsTrackedAtSizeZeroAndNeedsNothingSaved() {
        var model = CrashModel()
        let claimed = model.claim(file, .overwrite(offset: 0, length: 4096), currentSize: 0)
        XCTAssertTrue(claimed.isNew)
        XCTAssertEqual(claimed.pieces, [])
        XCTAssertEqual(model.files[file]?.syncedSize, 0)
    }

    func testADirectorySyncCommitsTheJournalUpToItsLastChange() {
        var model = CrashModel()
        let a = NameChange.created(place(dir, "a"), entry: file)
        let b = NameChange.created(place(other, "b"), entry: EntryID(device: 1, inode: 11))
        let c = NameChange.moved(place(dir, "a"), to: place(dir, "c"), entry: file)
        let d = NameChange.removed(place(other, "b"), entry: EntryID(device: 1, inode: 11), kept: .link(1))
        for change in [a, b, c, d] { model.record(change) }
        XCTAssertEqual(model.directorySynced(EntryID(device: 1, inode: 99)), [], "a directory with no change commits nothing")
        XCTAssertEqual(model.directorySynced(dir), [a, b, c], "the other directory's earlier change is committed with it")
        XCTAssertEqual(model.journal, [d])
        let all = model.takeAll()
        XCTAssertEqual(all.undo, [d])
        XCTAssertEqual(model.journal, [])
    }

    func testACrashUndoesNewestFirstAndForgetsEverything() {
        var model = CrashModel()
        let a = NameChange.created(place(dir, "a"), entry: file)
        let b = NameChange.moved(place(dir, "a"), to: place(other, "b"), entry: file)
        let c = NameChange.exchanged(place(other, "b"), place(dir, "x"))
        for change in [a, b, c] { model.record(change) }
        _ = model.claim(file, .overwrite(offset: 0, length: 1), currentSize: 0)
        let all = model.takeAll()
        XCTAssertEqual(all.undo, [c, b, a])
        XCTAssertEqual(Array(all.files.keys), [file])
        XCTAssertTrue(model.files.isEmpty && model.journal.isEmpty, "after the crash, nothing is unsynced")
        XCTAssertEqual(b.directories, [dir, other])
    }

    func testARangeThatCouldNotBeSavedMarksTheFile() {
        var model = CrashModel()
        let pieces = model.claim(file, .overwrite(offset: 0, length: 10), currentSize: 10).pieces
        model.forget(file, pieces)
        XCTAssertEqual(model.files[file]?.lost, true)
        XCTAssertEqual(model.files[file]?.saved, [])
    }
}
