import Glibc
import PurgeCore
import PurgeSys
import XCTest

@testable import PurgeFS

/// Changes made behind the mount as events (`foundBehindMount`), in-process:
/// the ledger's observer repairs its totals from them, reconciling a
/// directory announces what it found through the fan-out (never as the
/// mount's own `created`, `removed`, `moved`), and the cloud tier, which
/// hears them not, schedules no remote delete for a name removed there.
final class FoundBehindMountTests: XCTestCase {
    private let journal = EventJournal()

    private func file(_ id: EntryID, size: Int) -> stat {
        var status = stat()
        status.st_mode = S_IFREG | 0o644
        status.st_dev = dev_t(id.device)
        status.st_ino = ino_t(id.inode)
        status.st_nlink = 1
        status.st_size = off_t(size)
        status.st_blocks = blkcnt_t((size + 4095) / 4096 * 8)
        return status
    }

    private func directory(_ id: EntryID) -> stat {
        var status = file(id, size: 0)
        status.st_mode = S_IFDIR | 0o755
        return status
    }

    func testTheLedgersObserverRepairsItsTotalsFromChangesFoundBehindTheMount() throws {
        let container = try InProcessContainer()
        defer { container.remove() }
        let events = Observers([container.state, EventRecorder("after", journal: journal)])
        let root = container.rootID
        let sub = EntryID(device: root.device, inode: 9_000_001)
        let a = EntryID(device: root.device, inode: 9_000_002), b = EntryID(device: root.device, inode: 9_000_003)

        "a".withCString { events.foundBehindMount(.created(file(a, size: 5000), id: a, name: $0, in: root)) }
        "sub".withCString { events.foundBehindMount(.created(directory(sub), id: sub, name: $0, in: root)) }
        "b".withCString { events.foundBehindMount(.created(file(b, size: 3000), id: b, name: $0, in: sub)) }
        XCTAssertEqual(container.rootTotals.files, 2)
        XCTAssertEqual(container.rootTotals.size, 8000)
        XCTAssertEqual(container.rootTotals.allocated, 12288)
        XCTAssertEqual(container.recordedPath(of: sub), "sub")

        "renamed".withCString { events.foundBehindMount(.moved(directory(sub), id: sub, from: root, newName: $0, to: root)) }
        XCTAssertEqual(container.recordedPath(of: sub), "renamed")
        events.foundBehindMount(.removed(file(a, size: 0), id: a, from: root))
        XCTAssertEqual(container.rootTotals.files, 1)
        XCTAssertEqual(container.rootTotals.size, 3000)
        XCTAssertFalse(container.contains(a))
        events.foundBehindMount(.removed(file(b, size: 0), id: b, from: sub))
        events.foundBehindMount(.removed(directory(sub), id: sub, from: root))
        XCTAssertEqual(container.rootTotals, .zero)
        XCTAssertFalse(container.contains(sub))
        XCTAssertEqual(container.state.read { ledger, _ in ledger.invariantViolations() }, [])

        // Every event went on to the observer registered after the ledger.
        XCTAssertEqual(journal.heard.count, 7)
        XCTAssertEqual(journal.heard.first, "after:found created(a \(a.inode) in \(root.inode))")
    }

    func testReconcilingADirectoryAnnouncesWhatItFoundThroughTheFanOut() throws {
        let container = try InProcessContainer(observers: [EventRecorder("observer", journal: journal)])
        defer { container.remove() }
        let root = container.rootID.inode
        let a = try container.write("a", bytes: 5000)
        let sub = try container.makeDirectory("sub")
        let b = try container.write("sub/b", bytes: 3000)
        XCTAssertFalse(try container.reconcile("").isEmpty)
        XCTAssertEqual(journal.heard.sorted(), [
            "observer:found created(a \(a.inode) in \(root))", "observer:found created(b \(b.inode) in \(sub.inode))",
            "observer:found created(sub \(sub.inode) in \(root))",
        ])
        XCTAssertEqual(container.rootTotals.files, 2)
        XCTAssertEqual(container.rootTotals.size, 8000)

        journal.clear()
        XCTAssertEqual(rename("\(container.path)/sub", "\(container.path)/renamed"), 0)
        XCTAssertEqual(unlink("\(container.path)/a"), 0)
        try container.reconcile("")
        XCTAssertEqual(journal.heard.sorted(), [
            "observer:found moved(\(sub.inode) from \(root) -> renamed in \(root))",
            "observer:found removed(\(a.inode) from \(root))",
        ])
        XCTAssertEqual(container.recordedPath(of: sub), "renamed")
        XCTAssertEqual(container.rootTotals.files, 1)
        XCTAssertEqual(container.rootTotals.size, 3000)

        journal.clear()
        XCTAssertEqual(unlink("\(container.path)/renamed/b"), 0)
        XCTAssertEqual(rmdir("\(container.path)/renamed"), 0)
        try container.reconcile("")
        XCTAssertEqual(journal.heard, [
            "observer:found removed(\(b.inode) from \(sub.inode))", "observer:found removed(\(sub.inode) from \(root))",
        ])
        XCTAssertEqual(container.rootTotals, .zero)
        XCTAssertEqual(container.state.read { ledger, _ in ledger.invariantViolations() }, [])
    }

    /// A document removed behind the mount stays on the remote (the tier
    /// finds such changes by its own walk); the same removal through the
    /// mount is carried over. Read from the manifest the tier saves.
    func testTheCloudTierSchedulesNoRemoteDeleteForARemovalFoundBehindTheMount() throws {
        let remote = try InProcessContainer.temporaryDirectory("remote")
        defer { try? FileManager.default.removeItem(atPath: remote) }
        // As the tier leaves two uploaded documents (removals go by path:
        // the signatures do not matter here).
        var manifest = CloudManifest()
        manifest.records["docs/report.txt"] = CloudRecord(signature: .init(inode: 1, size: 2000, modified: 1), evicted: false)
        manifest.records["docs/notes.txt"] = CloudRecord(signature: .init(inode: 2, size: 1000, modified: 1), evicted: false)
        manifest.records["docs/old/draft.txt"] = CloudRecord(signature: .init(inode: 3, size: 500, modified: 1), evicted: false)
        let container = try InProcessContainer(cloud: .init(remote: remote, zones: ["docs"], manifest: manifest))
        defer { container.remove() }
        let docs = try container.makeDirectory("docs")
        let report = try container.write("docs/report.txt", bytes: 2000)
        try container.write("docs/notes.txt", bytes: 1000)
        let old = try container.makeDirectory("docs/old")
        try container.write("docs/old/draft.txt", bytes: 500)
        try container.reconcile("")
        XCTAssertEqual(container.rootTotals.files, 3)
        XCTAssertEqual(try savedManifest(container), manifest)

        XCTAssertEqual(unlink("\(container.path)/docs/report.txt"), 0)
        XCTAssertEqual(unlink("\(container.path)/docs/old/draft.txt"), 0)
        XCTAssertEqual(rmdir("\(container.path)/docs/old"), 0)
        XCTAssertEqual(try container.reconcile("docs").count, 2)
        XCTAssertFalse(container.contains(report), "the ledger repaired itself")
        XCTAssertFalse(container.contains(old))
        XCTAssertEqual(container.rootTotals.files, 1)
        XCTAssertEqual(try savedManifest(container), manifest)

        // Through the mount, the same kind of removal is a remote delete.
        var status = stat()
        XCTAssertEqual(lstat("\(container.path)/docs/notes.txt", &status), 0)
        XCTAssertEqual(unlink("\(container.path)/docs/notes.txt"), 0)
        "notes.txt".withCString { container.filesystem.events.removed(status, id: EntryID(status), name: $0, from: docs) }
        XCTAssertEqual(try savedManifest(container).intents, [.remove("docs/notes.txt")])
        XCTAssertNil(try savedManifest(container).records["docs/notes.txt"])
        XCTAssertNotNil(try savedManifest(container).records["docs/report.txt"])
    }

    private func savedManifest(_ container: InProcessContainer) throws -> CloudManifest {
        let bytes = try XCTUnwrap(try container.mount.stateDirectory.read(CloudManifest.fileName))
        return try XCTUnwrap(CloudManifest(decoding: bytes))
    }
}
