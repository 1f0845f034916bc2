import PurgeCore

/// The purgefs flags set with `setfattr` (`pinned`, `group`, `tombstone`),
/// kept in the state directory by backing identity rather than as xattrs on
/// the files, so the walk at mount reads one small file instead of an
/// attribute per file. Lines of `device inode flags`.
struct StoredFlags: Equatable, Sendable {
    struct Flags: OptionSet, Hashable, Sendable {
        let rawValue: UInt8
        static let pinned = Flags(rawValue: 1)
        static let group = Flags(rawValue: 2)
        static let tombstone = Flags(rawValue: 4)
    }

    static let fileName = "flags"

    private(set) var entries: [EntryID: Flags] = [:]

    init() {}

    func flags(of id: EntryID) -> Flags { entries[id] ?? [] }

    mutating func set(_ flag: Flags, _ on: Bool, for id: EntryID) {
        var current = flags(of: id)
        if on { current.insert(flag) } else { current.remove(flag) }
        entries[id] = current.isEmpty ? nil : current
    }

    /// Forgets an entry that no longer exists.
    mutating func remove(_ id: EntryID) {
        entries[id] = nil
    }

    var encoded: [UInt8] {
        var text = ""
        for (id, flags) in entries.sorted(by: { $0.key < $1.key }) {
            text += "\(id.device) \(id.inode) \(flags.rawValue)\n"
        }
        return Array(text.utf8)
    }

    /// Parses the file; nil when any line is malformed.
    init?(decoding data: [UInt8]) {
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 3, let device = UInt64(fields[0]), let inode = UInt64(fields[1]),
                  let raw = UInt8(fields[2])
            else { return nil }
            entries[EntryID(device: device, inode: inode)] = Flags(rawValue: raw)
        }
    }
}
