import Glibc
import PurgeCore
import PurgeSys
import XCTest

@testable import PurgeFS

/// `Observers` in-process: the order each event reaches the observers in,
/// `beginOpen`'s unwinding when one refuses, `beforeModify`'s refusal, and
/// `needsRoom` asking only for what is still missing.
final class ObserversTests: XCTestCase {
    private static let journal = EventJournal()

    override func setUp() {
        Self.journal.clear()
    }

    private func recorder(_ name: String, refusesOpen: Bool = false, refusesModify: Errno? = nil, frees: UInt64 = 0) -> EventRecorder {
        EventRecorder(name, journal: Self.journal, refusesOpen: refusesOpen, refusesModify: refusesModify, frees: frees)
    }

    private var heard: [String] { Self.journal.heard }

    private func inode() throws -> Inode { try makeTestInode() }

    func testEventsReachTheObserversInRegistrationOrder() {
        let events = Observers([recorder("ledger"), DeafObserver(), recorder("cloud")])
        var status = stat()
        status.st_mode = S_IFREG | 0o644
        "a".withCString { events.created(status, id: EntryID(device: 1, inode: 7), name: $0, in: EntryID(device: 1, inode: 1), opened: true) }
        events.closed(EntryID(device: 1, inode: 7))
        XCTAssertEqual(heard, [
            "ledger:created(a, opened: true)", "cloud:created(a, opened: true)",
            "ledger:closed(7)", "cloud:closed(7)",
        ])
    }

    /// A rename over a name is one event: each observer hears its whole
    /// rename (by default its `removed`, then its `moved`) before the next.
    func testARenameOverANameReachesEachObserverWhole() {
        let events = Observers([recorder("ledger"), DeafObserver(), recorder("cloud")])
        var status = stat()
        status.st_mode = S_IFREG | 0o644
        let root = EntryID(device: 1, inode: 1), tmp = EntryID(device: 1, inode: 3)
        "new".withCString { name in
            "config".withCString { newName in
                events.renamedOver(status, id: EntryID(device: 1, inode: 8), name: name, from: tmp, newName: newName, to: root,
                                   replacing: status, replacedID: EntryID(device: 1, inode: 7))
            }
        }
        XCTAssertEqual(heard, [
            "ledger:removed(config)", "ledger:moved(new -> config)",
            "cloud:removed(config)", "cloud:moved(new -> config)",
        ])
    }

    func testOpenBracketsNestAndARefusalEndsOnlyThoseBegun() throws {
        let file = try inode()
        let events = Observers([recorder("ledger"), recorder("cloud")])
        try events.beginOpen(file)
        events.endOpen(file)
        XCTAssertEqual(heard, ["ledger:beginOpen", "cloud:beginOpen", "cloud:endOpen", "ledger:endOpen"])

        Self.journal.clear()
        let refusing = Observers([
            recorder("ledger"), recorder("cloud", refusesOpen: true),
            recorder("third"),
        ])
        XCTAssertThrowsError(try refusing.beginOpen(file)) { XCTAssertEqual($0 as? Errno, Errno.ioError) }
        XCTAssertEqual(heard, ["ledger:beginOpen", "cloud:beginOpen", "ledger:endOpen"])
    }

    func testNeedsRoomAsksEachInTurnForWhatIsStillMissing() {
        let events = Observers([
            recorder("ledger"), recorder("cloud", frees: 30),
            recorder("third", frees: 100), recorder("fourth", frees: 100),
        ])
        XCTAssertEqual(events.needsRoom(50, reason: "write"), 50)
        XCTAssertEqual(heard, ["ledger:needsRoom(50, write)", "cloud:needsRoom(50, write)", "third:needsRoom(20, write)"])
        XCTAssertEqual(Observers([DeafObserver()]).needsRoom(10, reason: "monitor"), 0)
    }

    func testBeforeModifyReachesEveryObserverInOrder() throws {
        let container = try InProcessContainer()
        defer { container.remove() }
        let file = try inode()
        let events = Observers([recorder("ledger"), DeafObserver(), recorder("clones"), recorder("cloud")])
        try events.beforeModify(file, .link, breaking: container.filesystem.breaking)
        try events.beforeModify(file, .truncate(keepingData: false), breaking: container.filesystem.breaking)
        XCTAssertEqual(heard, [
            "ledger:beforeModify(link)", "clones:beforeModify(link)", "cloud:beforeModify(link)",
            "ledger:beforeModify(truncate, keepingData: false)", "clones:beforeModify(truncate, keepingData: false)",
            "cloud:beforeModify(truncate, keepingData: false)",
        ])
    }

    /// The first refusal is the change's error: the observers after it are
    /// not asked, and those before it are not told (the change has not begun).
    func testARefusedBeforeModifyIsThrownAndTheRestAreNotAsked() throws {
        let container = try InProcessContainer()
        defer { container.remove() }
        let file = try inode()
        let events = Observers([
            recorder("ledger"), recorder("clones", refusesModify: .noSpace), recorder("cloud", refusesModify: .ioError),
            recorder("crash"),
        ])
        XCTAssertThrowsError(try events.beforeModify(file, .openTruncating, breaking: container.filesystem.breaking)) {
            XCTAssertEqual($0 as? Errno, Errno.noSpace)
        }
        XCTAssertEqual(heard, ["ledger:beforeModify(openTruncating)", "clones:beforeModify(openTruncating)"])
    }
}
