import Glibc
import PurgeCore
import PurgeSys
import Synchronization

@testable import PurgeFS

/// What the recorders heard, in order, as "name:event".
final class EventJournal: Sendable {
    private let entries = Mutex<[String]>([])

    var heard: [String] { entries.withLock { $0 } }

    func append(_ entry: String) { entries.withLock { $0.append(entry) } }

    func clear() { entries.withLock { $0.removeAll() } }
}

/// An observer that writes what it hears into a journal, and can refuse
/// `beginOpen` or `beforeModify`, or free room.
final class EventRecorder: FileSystemObserver {
    let name: String
    let journal: EventJournal
    let refusesOpen: Bool
    let refusesModify: Errno?
    let frees: UInt64

    init(_ name: String, journal: EventJournal, refusesOpen: Bool = false, refusesModify: Errno? = nil, frees: UInt64 = 0) {
        self.name = name
        self.journal = journal
        self.refusesOpen = refusesOpen
        self.refusesModify = refusesModify
        self.frees = frees
    }

    private func note(_ event: String) { journal.append("\(name):\(event)") }

    func beginOpen(_ inode: Inode) throws(Errno) {
        note("beginOpen")
        if refusesOpen { throw Errno.ioError }
    }
    func endOpen(_ inode: Inode) { note("endOpen") }
    func created(_ status: stat, id: EntryID, name: CName, in parent: EntryID, opened: Bool) {
        note("created(\(String(cString: name)), opened: \(opened))")
    }
    func removed(_ status: stat, id: EntryID, name: CName, from parent: EntryID) {
        note("removed(\(String(cString: name)))")
    }
    func moved(_ status: stat, id: EntryID, name: CName, from parent: EntryID, newName: CName, to newParent: EntryID) {
        note("moved(\(String(cString: name)) -> \(String(cString: newName)))")
    }
    func closed(_ id: EntryID) { note("closed(\(id.inode))") }
    func exchanged(_ exchange: Exchange) { note("exchanged(\(exchange.oneBackingFile))") }
    func needsRoom(_ bytes: UInt64, reason: String) -> UInt64 {
        note("needsRoom(\(bytes), \(reason))")
        return min(bytes, frees)
    }
    func beforeModify(_ inode: Inode, _ change: Modification, breaking: CloneBreaking) throws(Errno) {
        switch change {
        case .data: note("beforeModify(data)")
        case .truncate(let keepingData): note("beforeModify(truncate, keepingData: \(keepingData))")
        case .openTruncating: note("beforeModify(openTruncating)")
        case .link: note("beforeModify(link)")
        }
        if let refusesModify { throw refusesModify }
    }
    /// "found created(NAME in PARENT)", "found removed(INODE from PARENT)",
    /// "found moved(INODE from PARENT -> NAME in PARENT)", by inode numbers.
    func foundBehindMount(_ change: FoundChange) {
        switch change {
        case .created(_, let id, let name, let parent):
            note("found created(\(String(cString: name)) \(id.inode) in \(parent.inode))")
        case .removed(_, let id, let parent):
            note("found removed(\(id.inode) from \(parent.inode))")
        case .moved(_, let id, let parent, let newName, let newParent):
            note("found moved(\(id.inode) from \(parent.inode) -> \(String(cString: newName)) in \(newParent.inode))")
        }
    }
}

/// Hears nothing: every event has a default.
final class DeafObserver: FileSystemObserver {}
