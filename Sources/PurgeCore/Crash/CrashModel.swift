/// What a power loss now would take away (`purgefs crash`), kept while the
/// mount runs: per file, an undo record of its data since its last sync
/// (`UnsyncedFile`); for names, a journal of the changes no directory sync
/// has made durable yet, in the order they were made.
///
/// Names follow a journaling filesystem (ext4 in ordered mode, XFS): every
/// name change goes into one journal in order, and a sync of a directory
/// commits the journal up to that directory's last change, every directory's
/// earlier changes with it (a journal commits in order, never a later
/// change without an earlier one). A file's own fsync commits its data,
/// never its names: POSIX asks for the directory's fsync, and a file that
/// was synced but never linked durably may vanish. What is not committed is
/// undone by a crash, newest first, so the names are exactly as they were
/// at the last commit.
public struct CrashModel: Sendable {
    public private(set) var files: [EntryID: UnsyncedFile] = [:]
    /// Name changes not committed yet, oldest first.
    public private(set) var journal: [NameChange] = []

    public init() {}

    /// Whether `id` has data to restore.
    public func isTracked(_ id: EntryID) -> Bool { files[id] != nil }

    /// Before `change` to file `id`, whose size is `currentSize` now: starts
    /// tracking it at its first change since a sync (its size then is its
    /// synced size), and returns the ranges of the synced version to save
    /// first, with where they go in its undo file. `isNew`: tracking began.
    public mutating func claim(_ id: EntryID, _ change: DataChange, currentSize: UInt64) -> (isNew: Bool, pieces: [UnsyncedFile.SavedRange]) {
        var file = files[id] ?? UnsyncedFile(syncedSize: currentSize)
        let isNew = files[id] == nil
        let pieces = file.claim(change)
        files[id] = file
        return (isNew, pieces)
    }

    /// Ranges `claim` gave that could not be saved.
    public mutating func forget(_ id: EntryID, _ pieces: [UnsyncedFile.SavedRange]) {
        files[id]?.forget(pieces)
    }

    /// `fsync`, `fdatasync` or an `O_SYNC` write: the file's data is durable.
    /// Returns whether it had an undo record (to delete).
    @discardableResult
    public mutating func synced(_ id: EntryID) -> Bool {
        files.removeValue(forKey: id) != nil
    }

    /// A name change, in the order the handlers made them (under the
    /// directories' locks).
    public mutating func record(_ change: NameChange) {
        journal.append(change)
    }

    /// `fsyncdir` of `directory`: commits the journal up to its last change
    /// there. Returns the committed changes (their kept entries can go).
    public mutating func directorySynced(_ directory: EntryID) -> [NameChange] {
        guard let last = journal.lastIndex(where: { $0.directories.contains(directory) }) else { return [] }
        let committed = Array(journal[...last])
        journal.removeFirst(last + 1)
        return committed
    }

    /// Everything at once, for a crash: the files to restore and the name
    /// changes to undo, newest first. The model starts again empty, as after
    /// a reboot.
    public mutating func takeAll() -> (files: [EntryID: UnsyncedFile], undo: [NameChange]) {
        defer { self = CrashModel() }
        return (files, journal.reversed())
    }
}

/// A directory and a name in it.
public struct Place: Hashable, Sendable {
    public let parent: EntryID
    public let name: [UInt8]

    public init(parent: EntryID, name: [UInt8]) {
        self.parent = parent
        self.name = name
    }
}

/// One name change the crash model may undo.
public enum NameChange: Sendable, Equatable {
    /// `place` was made for `entry` (create, mkdir, mknod, symlink, link).
    case created(Place, entry: EntryID)
    /// `place`, naming `entry`, was removed (unlink, rmdir, replaced by a
    /// rename); `kept` says how it comes back.
    case removed(Place, entry: EntryID, kept: Kept)
    /// `entry` moved from one place to another.
    case moved(Place, to: Place, entry: EntryID)
    /// `RENAME_EXCHANGE` of two places.
    case exchanged(Place, Place)

    /// How a removed name is brought back.
    public enum Kept: Sendable, Equatable {
        /// A hard link made before the removal, number `n` in the keep directory.
        case link(UInt64)
        /// A directory (empty when removed): made again with its mode and owner.
        case directory(mode: UInt32, user: UInt32, group: UInt32)
        /// Could not be kept (no link across filesystems): it stays removed.
        case lost
    }

    /// The directories whose sync commits it.
    public var directories: [EntryID] {
        switch self {
        case .created(let place, _), .removed(let place, _, _): return [place.parent]
        case .moved(let from, let to, _): return [from.parent, to.parent]
        case .exchanged(let one, let other): return [one.parent, other.parent]
        }
    }
}
