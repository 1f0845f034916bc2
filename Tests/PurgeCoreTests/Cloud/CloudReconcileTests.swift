@testable import PurgeCore
import XCTest

/// The cloud tier's decisions at mount, in-process, one case of
/// `CloudReconcile`'s table per test: what the manifest, the zones and the
/// remote hold in, the actions and the manifest to save out.
final class CloudReconcileTests: XCTestCase {
    private let zones = ["Documents"]

    private func signature(_ inode: UInt64, _ size: UInt64 = 10, _ modified: UInt64 = 100) -> CloudSignature {
        CloudSignature(inode: inode, size: size, modified: modified)
    }

    private func file(_ signature: CloudSignature, allocated: Bool = true) -> CloudLocalFile {
        CloudLocalFile(signature: signature, allocated: allocated)
    }

    private func manifest(_ records: [String: CloudRecord], intents: [CloudIntent] = []) -> CloudManifest {
        var manifest = CloudManifest()
        manifest.records = records
        manifest.intents = intents
        return manifest
    }

    private func plan(
        _ manifest: CloudManifest, local: [String: CloudLocalFile], remote: [String: CloudSignature]? = [:]
    ) -> (actions: [CloudMountAction], manifest: CloudManifest) {
        CloudReconcile.plan(manifest: manifest, local: local, remote: remote, zones: zones)
    }

    // MARK: Nothing to do

    func testNothingHappensWhenAllIsAsRecorded() {
        let record = CloudRecord(signature: signature(1), evicted: false)
        let found = manifest(["Documents/a": record])
        let result = plan(found, local: ["Documents/a": file(signature(1))], remote: ["Documents/a": signature(90)])
        XCTAssertEqual(result.actions, [])
        XCTAssertEqual(result.manifest, found)
    }

    func testAnEmptyContainerWithAnEmptyRemoteDoesNothing() {
        let result = plan(CloudManifest(), local: [:], remote: [:])
        XCTAssertEqual(result.actions, [])
        XCTAssertEqual(result.manifest, CloudManifest())
    }

    // MARK: Uploads

    func testALocalFileWithoutARecordIsUploaded() {
        let result = plan(CloudManifest(), local: ["Documents/new": file(signature(1))])
        XCTAssertEqual(result.actions, [.upload("Documents/new")])
        XCTAssertEqual(result.manifest, CloudManifest(), "recorded once uploaded, not before")
    }

    func testALocalFileNewerThanItsRecordIsUploaded() {
        let found = manifest(["Documents/a": CloudRecord(signature: signature(1, 10, 100), evicted: false)])
        for changed in [signature(1, 11, 100), signature(1, 10, 101)] {
            let result = plan(found, local: ["Documents/a": file(changed)])
            XCTAssertEqual(result.actions, [.upload("Documents/a")], "\(changed)")
            XCTAssertEqual(result.manifest, found, "the record stays until the upload replaces it")
        }
    }

    func testAnotherFileUnderARecordedNameIsUploaded() {
        // Deleted and made anew while not mounted: another inode, not a rename.
        let found = manifest(["Documents/a": CloudRecord(signature: signature(1), evicted: false)])
        let result = plan(found, local: ["Documents/a": file(signature(2))])
        XCTAssertEqual(result.actions, [.upload("Documents/a")])
    }

    func testAnEvictedRecordWithAnotherFileAtItsNameIsLeftToTheUploadRule() {
        // Not the same inode: no hole is made of someone else's data; the
        // worker's upload then finds the record evicted (what it did before).
        let found = manifest(["Documents/a": CloudRecord(signature: signature(1), evicted: true)])
        let result = plan(found, local: ["Documents/a": file(signature(2, 50, 7))])
        XCTAssertEqual(result.actions, [.upload("Documents/a")])
    }

    // MARK: Documents gone locally

    func testARecordWhoseFileAndRemoteCopyAreBothGoneIsRemoved() {
        let found = manifest(["Documents/a": CloudRecord(signature: signature(1), evicted: false)])
        let result = plan(found, local: [:], remote: [:])
        XCTAssertEqual(result.actions, [.removeRemote("Documents/a")])
        XCTAssertEqual(result.manifest, manifest([:], intents: [.remove("Documents/a")]),
                       "removing a missing remote copy is fine: the intent is applied and dropped")
    }

    func testARecordWhoseFileIsGoneHasItsRemoteCopyRemovedNotShownAgain() {
        let found = manifest(["Documents/a": CloudRecord(signature: signature(1), evicted: false)])
        let result = plan(found, local: [:], remote: ["Documents/a": signature(90)])
        XCTAssertEqual(result.actions, [.removeRemote("Documents/a")], "no placeholder of a document deleted here")
        XCTAssertEqual(result.manifest.intents, [.remove("Documents/a")])
        XCTAssertEqual(result.manifest.records, [:])
    }

    func testAnEvictedRecordWhoseFileIsGoneIsRemovedToo() {
        let found = manifest(["Documents/a": CloudRecord(signature: signature(1), evicted: true)])
        XCTAssertEqual(plan(found, local: [:]).actions, [.removeRemote("Documents/a")])
    }

    func testARenamedUnchangedFileMovesItsRecordAndItsRemoteCopy() {
        let record = CloudRecord(signature: signature(1), evicted: false, remoteVersion: signature(0, 10, 90))
        let found = manifest(["Documents/old": record])
        let result = plan(found, local: ["Documents/new": file(signature(1))], remote: ["Documents/old": signature(90)])
        XCTAssertEqual(result.actions, [.renameRemote(from: "Documents/old", to: "Documents/new", keepsRecord: true)])
        XCTAssertEqual(result.manifest, manifest(["Documents/new": record], intents: [.rename("Documents/old", "Documents/new")]))
    }

    func testARenamedChangedFileMovesItsRemoteCopyAndIsUploadedAgain() {
        let found = manifest(["Documents/old": CloudRecord(signature: signature(1), evicted: false)])
        let result = plan(found, local: ["Documents/new": file(signature(1, 99, 100))])
        XCTAssertEqual(result.actions, [
            .renameRemote(from: "Documents/old", to: "Documents/new", keepsRecord: false), .upload("Documents/new"),
        ])
        XCTAssertEqual(result.manifest, manifest([:], intents: [.rename("Documents/old", "Documents/new")]))
    }

    func testARenameOntoARecordedNameIsADelete() {
        // Its inode is under a name with a record of its own: not taken for a rename.
        let other = CloudRecord(signature: signature(2), evicted: false)
        let found = manifest(["Documents/a": CloudRecord(signature: signature(1), evicted: false), "Documents/b": other])
        let result = plan(found, local: ["Documents/b": file(signature(1))])
        XCTAssertEqual(result.actions, [.removeRemote("Documents/a"), .upload("Documents/b")])
        XCTAssertEqual(result.manifest, manifest(["Documents/b": other], intents: [.remove("Documents/a")]))
    }

    func testOfAnInodesHardLinksTheFirstNameIsTheRename() {
        let record = CloudRecord(signature: signature(1), evicted: false)
        let found = manifest(["Documents/a": record])
        let result = plan(found, local: ["Documents/z": file(signature(1)), "Documents/m": file(signature(1))])
        XCTAssertEqual(result.actions, [
            .renameRemote(from: "Documents/a", to: "Documents/m", keepsRecord: true), .upload("Documents/z"),
        ])
    }

    func testTwoRecordsOfOneInodeGoneLocallyRenameOnceAndRemoveTheOther() {
        let record = CloudRecord(signature: signature(1), evicted: false)
        let found = manifest(["Documents/a": record, "Documents/b": record])
        let result = plan(found, local: ["Documents/c": file(signature(1))])
        XCTAssertEqual(result.actions, [
            .renameRemote(from: "Documents/a", to: "Documents/c", keepsRecord: true), .removeRemote("Documents/b"),
        ])
        XCTAssertEqual(result.manifest.records, ["Documents/c": record])
    }

    // MARK: Intents left by a crash

    func testIntentsLeftByACrashStayFirstInOrder() {
        let left: [CloudIntent] = [.rename("Documents/p", "Documents/q"), .remove("Documents/r")]
        let found = manifest(["Documents/a": CloudRecord(signature: signature(1), evicted: false)], intents: left)
        let result = plan(found, local: [:], remote: [:])
        XCTAssertEqual(result.actions, [.removeRemote("Documents/a")])
        XCTAssertEqual(result.manifest.intents, left + [.remove("Documents/a")])
    }

    func testARemoteCopyAPendingIntentRemovesIsNotShown() {
        let found = manifest([:], intents: [.remove("Documents/gone"), .remove("Documents/dir")])
        let result = plan(found, local: [:], remote: ["Documents/gone": signature(90), "Documents/dir/x": signature(91)])
        XCTAssertEqual(result.actions, [])
        XCTAssertEqual(result.manifest, found)
    }

    func testARemoteCopyAPendingIntentRenamesIsShownUnderItsNewNameOnly() {
        // Renamed here, then deleted here before the remote heard of either.
        let found = manifest([:], intents: [.rename("Documents/p", "Documents/q")])
        let result = plan(found, local: [:], remote: ["Documents/p": signature(90), "Documents/p2": signature(91)])
        XCTAssertEqual(result.actions, [.placeholder("Documents/p2"), .placeholder("Documents/q")])
        let kept = plan(found, local: ["Documents/q": file(signature(5))], remote: ["Documents/p": signature(90)])
        XCTAssertEqual(kept.actions, [.upload("Documents/q")], "the local file under the new name wins")
    }

    func testWhereTheIntentsTakeARemoteCopy() {
        let intents: [CloudIntent] = [.rename("D/a", "D/b"), .rename("D/dir", "D/new"), .remove("D/b/c"), .rename("D/b", "D/e")]
        XCTAssertEqual(intents.destination(of: "D/a"), "D/e")
        XCTAssertEqual(intents.destination(of: "D/dir/x/y"), "D/new/x/y")
        XCTAssertEqual(intents.destination(of: "D/dirt"), "D/dirt", "a prefix that is not a directory above")
        XCTAssertNil(intents.destination(of: "D/b/c/d"))
        XCTAssertEqual(intents.destination(of: "D/other"), "D/other")
        XCTAssertTrue(intents.affect("D/a"))
        XCTAssertTrue(intents.affect("D/dir/x"))
        XCTAssertFalse(intents.affect("D/e"))
        XCTAssertFalse(intents.affect("D/dirt"))
    }

    /// What an upload waits for: a delete of its path or of a directory
    /// above, and a rename from or onto either.
    func testWhichIntentsAnUploadWaitsFor() {
        let replaced: [CloudIntent] = [.remove("D/doc"), .rename("D/doc.new", "D/doc")]
        XCTAssertTrue(replaced.touch("D/doc"), "the delete of the old copy, and the rename onto it")
        XCTAssertTrue(replaced.touch("D/doc.new"))
        XCTAssertFalse(replaced.touch("D/doc2"), "a prefix that is not a directory above")
        XCTAssertFalse(replaced.touch("D/other"))
        XCTAssertTrue([CloudIntent.rename("D/x", "D/dir")].touch("D/dir/in"), "renamed onto a directory above")
        XCTAssertTrue([CloudIntent.remove("D/dir")].touch("D/dir/in"))
        XCTAssertFalse([CloudIntent.rename("D/dir/in", "D/y")].touch("D/dir"), "a rename below is not the directory's")
        XCTAssertFalse([CloudIntent]().touch("D/doc"))
    }

    // MARK: Evicted documents

    func testAnEvictedDocumentLeftAsItWasIsKept() {
        let found = manifest(["Documents/a": CloudRecord(signature: signature(1), evicted: true)])
        let result = plan(found, local: ["Documents/a": file(signature(1), allocated: false)])
        XCTAssertEqual(result.actions, [])
    }

    func testAnEvictedDocumentWithDataIsMadeAHoleAgainNotUploaded() {
        // A download cut short by kill -9: part of the data, the same size and time.
        let found = manifest(["Documents/a": CloudRecord(signature: signature(1), evicted: true)])
        let result = plan(found, local: ["Documents/a": file(signature(1), allocated: true)])
        XCTAssertEqual(result.actions, [.restoreHole("Documents/a", like: signature(1))])
        XCTAssertEqual(result.manifest, found)
    }

    func testAnEvictedDocumentWithAnotherSizeOrTimeIsMadeAHoleAgain() {
        let found = manifest(["Documents/a": CloudRecord(signature: signature(1, 10, 100), evicted: true)])
        for changed in [signature(1, 4, 100), signature(1, 10, 555)] {
            let result = plan(found, local: ["Documents/a": file(changed, allocated: false)])
            XCTAssertEqual(result.actions, [.restoreHole("Documents/a", like: signature(1, 10, 100))], "\(changed)")
        }
    }

    /// A clone's eviction records the placeholder (its own inode) before the
    /// clone leaves the data it shares: killed in between, the name still
    /// holds that data, under the backing file's inode.
    func testAnEvictedRecordWhoseNameHoldsAnotherFileWithDataIsUploadedNotEvicted() {
        let found = manifest(["Documents/a": CloudRecord(signature: signature(1), evicted: true)])
        let result = plan(found, local: ["Documents/a": file(signature(2), allocated: true)])
        XCTAssertEqual(result.actions, [.upload("Documents/a")])
        XCTAssertEqual(result.manifest.records["Documents/a"], CloudRecord(signature: signature(1), evicted: false))
        let hole = plan(found, local: ["Documents/a": file(signature(2), allocated: false)])
        XCTAssertEqual(hole.actions, [], "a hole of another inode is no data to upload")
        XCTAssertEqual(hole.manifest, found)
    }

    func testARenamedEvictedDocumentIsMadeAHoleUnderItsNewName() {
        let record = CloudRecord(signature: signature(1), evicted: true)
        let found = manifest(["Documents/old": record])
        let result = plan(found, local: ["Documents/new": file(signature(1), allocated: true)])
        XCTAssertEqual(result.actions, [
            .renameRemote(from: "Documents/old", to: "Documents/new", keepsRecord: true),
            .restoreHole("Documents/new", like: signature(1)),
        ])
    }

    // MARK: Remote documents

    func testARemoteDocumentNeverSeenHereBecomesAPlaceholder() {
        let result = plan(CloudManifest(), local: [:], remote: ["Documents/x/y": signature(90), "Documents/a": signature(91)])
        XCTAssertEqual(result.actions, [.placeholder("Documents/a"), .placeholder("Documents/x/y")])
        XCTAssertEqual(result.manifest, CloudManifest(), "recorded with the placeholder's own signature once made")
    }

    func testARemoteDocumentOutsideTheZonesIsNotShown() {
        let result = plan(CloudManifest(), local: [:], remote: ["Elsewhere/a": signature(90), "Documents": signature(91)])
        XCTAssertEqual(result.actions, [])
    }

    func testALocalFileWinsOverTheRemoteCopyOfItsName() {
        let result = plan(CloudManifest(), local: ["Documents/a": file(signature(1))], remote: ["Documents/a": signature(90)])
        XCTAssertEqual(result.actions, [.upload("Documents/a")])
    }

    func testAnUnlistedRemoteShowsNothingAndDecidesTheRest() {
        let found = manifest(["Documents/a": CloudRecord(signature: signature(1), evicted: false)])
        let result = plan(found, local: ["Documents/b": file(signature(2))], remote: nil)
        XCTAssertEqual(result.actions, [.removeRemote("Documents/a"), .upload("Documents/b")])
    }

    // MARK: The manifest

    func testNotingAnActionIsWhatThePlanSaves() {
        let record = CloudRecord(signature: signature(1), evicted: false)
        var manifest = manifest(["Documents/a": record, "Documents/b": record])
        manifest.note(.upload("Documents/a"))
        manifest.note(.restoreHole("Documents/a", like: signature(1)))
        manifest.note(.placeholder("Documents/z"))
        XCTAssertEqual(manifest, self.manifest(["Documents/a": record, "Documents/b": record]))
        manifest.note(.renameRemote(from: "Documents/a", to: "Documents/c", keepsRecord: false))
        manifest.note(.renameRemote(from: "Documents/b", to: "Documents/d", keepsRecord: true))
        XCTAssertEqual(manifest, self.manifest(
            ["Documents/d": record], intents: [.rename("Documents/a", "Documents/c"), .rename("Documents/b", "Documents/d")]))
    }

    func testEveryRecordEndsDecidedOnceInARandomContainer() {
        // Whatever is found, a record gone locally gets exactly one remote
        // change, and every local file without its recorded content one upload.
        var random = SplitMix64(seed: 13)
        for _ in 0..<300 {
            var records: [String: CloudRecord] = [:]
            var local: [String: CloudLocalFile] = [:]
            var remote: [String: CloudSignature] = [:]
            for index in 0..<8 {
                let path = "Documents/\(index)"
                let inode = random.next() % 6 + 1
                if random.next() % 2 == 0 {
                    records[path] = CloudRecord(signature: signature(inode), evicted: random.next() % 3 == 0)
                }
                if random.next() % 2 == 0 {
                    local[path] = file(signature(random.next() % 6 + 1, 10, 100 + random.next() % 2),
                                       allocated: random.next() % 2 == 0)
                }
                if random.next() % 2 == 0 { remote[path] = signature(90) }
            }
            let result = plan(manifest(records), local: local, remote: remote)
            let gone = Set(records.keys).subtracting(local.keys)
            let changed = result.actions.compactMap { action -> String? in
                switch action {
                case .removeRemote(let path), .renameRemote(let path, _, _): path
                default: nil
                }
            }
            XCTAssertEqual(changed.sorted(), gone.sorted())
            for action in result.actions {
                switch action {
                case .placeholder(let path):
                    XCTAssertNil(local[path])
                    XCTAssertNil(result.manifest.records[path])
                case .upload(let path):
                    XCTAssertNotEqual(result.manifest.records[path]?.signature, local[path]?.signature)
                case .restoreHole(let path, let like):
                    XCTAssertEqual(local[path]?.signature.inode, like.inode)
                    XCTAssertEqual(result.manifest.records[path]?.evicted, true)
                case .removeRemote, .renameRemote:
                    break
                }
            }
            var replayed = manifest(records)
            for action in result.actions { replayed.note(action) }
            XCTAssertEqual(replayed, result.manifest, "the manifest is the actions noted in order")
        }
    }
}
