import Glibc
import PurgeCore
import PurgeSys

/// The purgefs flags set with `setfattr` (`pinned`, `group`, `tombstone`,
/// `excluded_from_backup`),
/// kept in the state directory by backing identity rather than as xattrs on
/// the files, so the walk at mount reads one small file instead of an
/// attribute per file, with each inode's birth time to tell it from a later
/// inode given the same number.
struct StoredFlags: Equatable, Sendable {
    struct Flags: OptionSet, Hashable, Sendable {
        let rawValue: UInt8
        static let pinned = Flags(rawValue: 1)
        static let group = Flags(rawValue: 2)
        static let tombstone = Flags(rawValue: 4)
        /// Not the ledger's: only read back by `user.purgefs.excluded_from_backup`.
        static let excludedFromBackup = Flags(rawValue: 8)
    }

    static let fileName = "flags"

    /// An entry's flags, and when the inode they were set on was made
    /// (nanoseconds since the epoch; 0 where the filesystem does not say).
    struct Entry: Equatable, Sendable {
        var flags: Flags
        var born: UInt64
    }

    private(set) var entries: [EntryID: Entry] = [:]

    init() {}

    func flags(of id: EntryID) -> Flags { entries[id]?.flags ?? [] }

    /// Whether the flags stored for `id` were set on the inode made at
    /// `born`, not on an earlier one that had its number (ext4 hands a freed
    /// inode number out again at once). An unknown time on either side
    /// counts as the same inode.
    func belong(to id: EntryID, born: UInt64?) -> Bool {
        guard let entry = entries[id], entry.born != 0, let born else { return true }
        return entry.born == born
    }

    /// The birth time to keep with, or check against, the flags of `id`,
    /// whose name holds the inode `status` describes; `read` gives that
    /// inode's. None for a linked clone: its identity is its anchor's, not
    /// the inode its name holds, which changes when it breaks away.
    static func birthTime(of id: EntryID, holding status: stat, read: () throws(Errno) -> UInt64?) -> UInt64? {
        guard id == EntryID(status) else { return nil }
        return (try? read()) ?? nil
    }

    /// Sets or clears `flag` of the inode `id` made at `born`; flags left by
    /// an earlier inode with that number are dropped first.
    mutating func set(_ flag: Flags, _ on: Bool, for id: EntryID, born: UInt64?) {
        var current = belong(to: id, born: born) ? flags(of: id) : []
        if on { current.insert(flag) } else { current.remove(flag) }
        entries[id] = current.isEmpty ? nil : Entry(flags: current, born: born ?? entries[id]?.born ?? 0)
    }

    /// Forgets an entry that no longer exists.
    mutating func remove(_ id: EntryID) {
        entries[id] = nil
    }

    /// Lines of `device inode flags born`.
    var encoded: [UInt8] {
        var text = ""
        for (id, entry) in entries.sorted(by: { $0.key < $1.key }) {
            text += "\(id.device) \(id.inode) \(entry.flags.rawValue) \(entry.born)\n"
        }
        return Array(text.utf8)
    }

    /// Parses the file (lines without `born`, as written before it was kept,
    /// are read as unknown); nil when any line is malformed.
    init?(decoding data: [UInt8]) {
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 3 || fields.count == 4, let device = UInt64(fields[0]), let inode = UInt64(fields[1]),
                  let raw = UInt8(fields[2])
            else { return nil }
            let born = fields.count == 4 ? UInt64(fields[3]) : 0
            guard let born else { return nil }
            entries[EntryID(device: device, inode: inode)] = Entry(flags: Flags(rawValue: raw), born: born)
        }
    }
}
