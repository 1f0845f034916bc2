import Glibc
import PurgeCore
import PurgeSys
import Synchronization
import XCTest

@testable import PurgeFS

/// `Observers` in-process: the order each event reaches the observers in,
/// `beginOpen`'s unwinding when one refuses, and `needsRoom` asking only for
/// what is still missing.
final class ObserversTests: XCTestCase {
    /// What the recorders heard, in order.
    private final class Journal: Sendable {
        let entries = Mutex<[String]>([])
        func withLock<T>(_ body: (inout [String]) -> T) -> T { entries.withLock { body(&$0) } }
    }

    /// Writes what it hears into a shared journal, as "name:event".
    private final class Recorder: FileSystemObserver {
        let name: String
        let journal: Journal
        let refusesOpen: Bool
        let frees: UInt64

        init(_ name: String, journal: Journal, refusesOpen: Bool = false, frees: UInt64 = 0) {
            self.name = name
            self.journal = journal
            self.refusesOpen = refusesOpen
            self.frees = frees
        }

        private func note(_ event: String) { journal.withLock { $0.append("\(name):\(event)") } }

        func beginOpen(_ inode: Inode) throws(Errno) {
            note("beginOpen")
            if refusesOpen { throw Errno.ioError }
        }
        func endOpen(_ inode: Inode) { note("endOpen") }
        func created(_ status: stat, id: EntryID, name: CName, in parent: EntryID, opened: Bool) {
            note("created(\(String(cString: name)), opened: \(opened))")
        }
        func closed(_ id: EntryID) { note("closed(\(id.inode))") }
        func exchanged(_ exchange: Exchange) { note("exchanged(\(exchange.oneBackingFile))") }
        func needsRoom(_ bytes: UInt64, reason: String) -> UInt64 {
            note("needsRoom(\(bytes), \(reason))")
            return min(bytes, frees)
        }
    }

    /// Hears nothing: every event has a default.
    private final class Deaf: FileSystemObserver {}

    private static let journal = Journal()

    override func setUp() {
        Self.journal.withLock { $0.removeAll() }
    }

    private var heard: [String] { Self.journal.withLock { $0 } }

    private func inode() throws -> Inode {
        let root = open("/", O_RDONLY | O_DIRECTORY)
        XCTAssertGreaterThanOrEqual(root, 0)
        let file = open("/", O_RDONLY | O_DIRECTORY)
        let pool = DescriptorPool(filesystem: FileDescriptor(rawValue: root), openFilesLimit: 1024)
        let id = EntryID(device: 1, inode: 2)
        return Inode(id: NodeID(2), descriptor: FileDescriptor(rawValue: file), key: id, backing: id, fileType: S_IFREG, pool: pool)
    }

    func testEventsReachTheObserversInRegistrationOrder() {
        let events = Observers([Recorder("ledger", journal: Self.journal), Deaf(), Recorder("cloud", journal: Self.journal)])
        var status = stat()
        status.st_mode = S_IFREG | 0o644
        "a".withCString { events.created(status, id: EntryID(device: 1, inode: 7), name: $0, in: EntryID(device: 1, inode: 1), opened: true) }
        events.closed(EntryID(device: 1, inode: 7))
        XCTAssertEqual(heard, [
            "ledger:created(a, opened: true)", "cloud:created(a, opened: true)",
            "ledger:closed(7)", "cloud:closed(7)",
        ])
    }

    func testOpenBracketsNestAndARefusalEndsOnlyThoseBegun() throws {
        let file = try inode()
        let events = Observers([Recorder("ledger", journal: Self.journal), Recorder("cloud", journal: Self.journal)])
        try events.beginOpen(file)
        events.endOpen(file)
        XCTAssertEqual(heard, ["ledger:beginOpen", "cloud:beginOpen", "cloud:endOpen", "ledger:endOpen"])

        Self.journal.withLock { $0.removeAll() }
        let refusing = Observers([
            Recorder("ledger", journal: Self.journal), Recorder("cloud", journal: Self.journal, refusesOpen: true),
            Recorder("third", journal: Self.journal),
        ])
        XCTAssertThrowsError(try refusing.beginOpen(file)) { XCTAssertEqual($0 as? Errno, Errno.ioError) }
        XCTAssertEqual(heard, ["ledger:beginOpen", "cloud:beginOpen", "ledger:endOpen"])
    }

    func testNeedsRoomAsksEachInTurnForWhatIsStillMissing() {
        let events = Observers([
            Recorder("ledger", journal: Self.journal), Recorder("cloud", journal: Self.journal, frees: 30),
            Recorder("third", journal: Self.journal, frees: 100), Recorder("fourth", journal: Self.journal, frees: 100),
        ])
        XCTAssertEqual(events.needsRoom(50, reason: "write"), 50)
        XCTAssertEqual(heard, ["ledger:needsRoom(50, write)", "cloud:needsRoom(50, write)", "third:needsRoom(20, write)"])
        XCTAssertEqual(Observers([Deaf()]).needsRoom(10, reason: "monitor"), 0)
    }
}
