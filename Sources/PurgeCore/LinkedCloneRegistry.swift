/// Clones on a backing filesystem without reflinks: names that share one
/// backing inode (hard links kept private to purgefs) yet are separate files.
///
/// A *group* is one backing inode holding the shared data. Its names are:
/// - *anchored members*: each a clone, known by its directory and name, whose
///   identity, mode, owner, times and extended attributes are those of its
///   *anchor*, an empty inode of its own kept in the state directory; the
///   anchor's inode number is the member's identity for good (a member that
///   breaks gets its data copied into its anchor, which then replaces the name);
/// - any other name of the backing inode: the *primary*, whose attributes are
///   the backing inode's own (the original a first clone was made from).
///
/// Kept in the state directory as `linked-clones`, lines of `next N`,
/// `group ID DEVICE INODE CONTENT HANDLETYPE HANDLEHEX RETIRINGDEVICE RETIRINGINODE`
/// (`- -` when no backing is being retired) and
/// `member DEVICE INODE GROUP ORDER PARENTDEVICE PARENTINODE NAMEHEX` (`-`: no name).
public struct LinkedCloneRegistry: Equatable, Sendable {
    public struct Group: Equatable, Sendable {
        public var backing: EntryID
        public var handleType: Int32
        public var handle: [UInt8]
        /// `user.purgefs.content_id` of every name of the group.
        public var content: UInt64
        /// A backing being replaced by `backing` (its primary was modified):
        /// members still linked to it are moved over at the next mount.
        public var retiring: EntryID?
        public var isRetiring: Bool { retiring != nil }
    }

    public struct Member: Equatable, Sendable {
        public var group: UInt64
        /// Charging order: the earliest member is charged the group's data
        /// when the group has no primary.
        public var order: UInt64
        public var parent: EntryID
        /// Empty while the member has no name (unlinked, still open).
        public var name: [UInt8]
    }

    public struct Name: Hashable, Sendable {
        public let parent: EntryID
        public let name: [UInt8]
        public init(parent: EntryID, name: [UInt8]) {
            self.parent = parent
            self.name = name
        }
    }

    public static let fileName = "linked-clones"
    /// The state directory's subdirectory holding anchors and new backings.
    public static let anchorDirectory = "clone-anchors"
    static let firstID: UInt64 = 1 << 63

    public private(set) var groups: [UInt64: Group] = [:]
    /// Anchored members by identity (their anchor's).
    public private(set) var members: [EntryID: Member] = [:]
    private var byName: [Name: EntryID] = [:]
    private var byBacking: [EntryID: UInt64] = [:]
    /// Members of each group: a group's reads cost its size, not the registry's.
    private var byGroup: [UInt64: Set<EntryID>] = [:]
    private var next: UInt64 = firstID

    public init() {}

    public var isEmpty: Bool { groups.isEmpty }

    /// The anchor file of member `id` in the anchor directory.
    public static func anchorName(of id: EntryID) -> String { "a\(id.inode)" }

    private mutating func newID() -> UInt64 {
        defer { next += 1 }
        return next
    }

    // MARK: Reads

    public func group(backedBy backing: EntryID) -> UInt64? { byBacking[backing] }
    public func member(named name: Name) -> EntryID? { byName[name] }

    /// Anchored members of `group`, in charging order.
    public func members(of group: UInt64) -> [EntryID] {
        (byGroup[group] ?? []).sorted { members[$0]!.order < members[$1]!.order }
    }

    /// How many members of `group` have a name.
    public func namedMembers(of group: UInt64) -> Int {
        (byGroup[group] ?? []).filter { !members[$0]!.name.isEmpty }.count
    }

    // MARK: Changes

    /// Records `anchor` as a new clone of the data in `backing`, named
    /// `name`; the group is made when `backing` has none yet.
    public mutating func add(anchor: EntryID, named name: Name, backing: EntryID, handle: (Int32, [UInt8])) {
        remove(anchor)
        let group: UInt64
        if let known = byBacking[backing] {
            group = known
        } else {
            group = newID()
            groups[group] = Group(backing: backing, handleType: handle.0, handle: handle.1, content: group, retiring: nil)
            byBacking[backing] = group
        }
        if let holder = byName[name] { unname(holder) }
        let member = Member(group: group, order: newID(), parent: name.parent, name: name.name)
        members[anchor] = member
        byGroup[group, default: []].insert(anchor)
        index(anchor, member)
    }

    /// A member's name moved (rename through the mount); a member that held
    /// the new name loses it.
    public mutating func move(_ id: EntryID, to name: Name) {
        guard var member = members[id] else { return }
        if let holder = byName[name], holder != id { unname(holder) }
        unindex(id, member)
        member.parent = name.parent
        member.name = name.name
        members[id] = member
        index(id, member)
    }

    /// A member lost its name but may still be open.
    public mutating func unname(_ id: EntryID) {
        guard var member = members[id] else { return }
        unindex(id, member)
        member.name = []
        members[id] = member
    }

    /// Forgets a member; a group left with no member is dissolved (its
    /// backing has only primary names then, or none).
    public mutating func remove(_ id: EntryID) {
        guard let member = members.removeValue(forKey: id) else { return }
        unindex(id, member)
        byGroup[member.group]?.remove(id)
        if byGroup[member.group]?.isEmpty ?? true, let group = groups.removeValue(forKey: member.group) {
            byGroup[member.group] = nil
            byBacking[group.backing] = nil
            if let retiring = group.retiring { byBacking[retiring] = nil }
        }
    }

    /// The group's data moves to a new backing (its primary is about to be modified).
    public mutating func replaceBacking(of group: UInt64, with backing: EntryID, handle: (Int32, [UInt8])) {
        guard var record = groups[group] else { return }
        // Names still linked to the retiring backing stay members until moved.
        record.retiring = record.backing
        record.backing = backing
        record.handleType = handle.0
        record.handle = handle.1
        groups[group] = record
        byBacking[backing] = group
    }

    /// Every member has been moved to the new backing.
    public mutating func retired(_ group: UInt64) {
        guard let retiring = groups[group]?.retiring else { return }
        groups[group]!.retiring = nil
        byBacking[retiring] = nil
    }

    private mutating func index(_ id: EntryID, _ member: Member) {
        if !member.name.isEmpty { byName[Name(parent: member.parent, name: member.name)] = id }
    }

    private mutating func unindex(_ id: EntryID, _ member: Member) {
        let name = Name(parent: member.parent, name: member.name)
        if byName[name] == id { byName[name] = nil }
    }

    // MARK: Stored form

    public var encoded: [UInt8] {
        var text = "next \(next)\n"
        for (id, g) in groups.sorted(by: { $0.key < $1.key }) {
            let retiring = g.retiring.map { "\($0.device) \($0.inode)" } ?? "- -"
            text += "group \(id) \(g.backing.device) \(g.backing.inode) \(g.content) \(g.handleType) \(Hex.encode(g.handle)) \(retiring)\n"
        }
        for (id, m) in members.sorted(by: { $0.key < $1.key }) {
            text += "member \(id.device) \(id.inode) \(m.group) \(m.order) \(m.parent.device) \(m.parent.inode) \(Hex.encode(m.name))\n"
        }
        return Array(text.utf8)
    }

    /// Parses the file; nil when any line is malformed or refers to a missing group.
    public init?(decoding data: [UInt8]) {
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            let f = line.split(separator: " ")
            if f.count == 2, f[0] == "next", let n = UInt64(f[1]) {
                next = max(n, Self.firstID)
            } else if f.count == 9, f[0] == "group", let id = UInt64(f[1]), let device = UInt64(f[2]), let inode = UInt64(f[3]),
                      let content = UInt64(f[4]), let type = Int32(f[5]), let handle = Hex.decode(f[6]) {
                var retiring: EntryID?
                if f[7] != "-" {
                    guard let d = UInt64(f[7]), let i = UInt64(f[8]) else { return nil }
                    retiring = EntryID(device: d, inode: i)
                }
                let backing = EntryID(device: device, inode: inode)
                groups[id] = Group(backing: backing, handleType: type, handle: handle, content: content, retiring: retiring)
                byBacking[backing] = id
                if let retiring { byBacking[retiring] = id }
            } else if f.count == 8, f[0] == "member", let device = UInt64(f[1]), let inode = UInt64(f[2]),
                      let group = UInt64(f[3]), let order = UInt64(f[4]), let parentDevice = UInt64(f[5]),
                      let parentInode = UInt64(f[6]), let name = Hex.decode(f[7]), groups[group] != nil {
                let id = EntryID(device: device, inode: inode)
                guard members[id] == nil else { return nil }  // one line per member
                let member = Member(group: group, order: order, parent: EntryID(device: parentDevice, inode: parentInode), name: name)
                members[id] = member
                byGroup[group, default: []].insert(id)
                index(id, member)
            } else {
                return nil
            }
        }
        // Identifiers handed out later never repeat a stored one.
        let used = groups.keys.max().map { $0 + 1 } ?? 0
        let orders = members.values.map(\.order).max().map { $0 + 1 } ?? 0
        let contents = groups.values.map(\.content).max().map { $0 + 1 } ?? 0
        next = max(next, used, orders, contents)
    }
}

/// Lower-case hexadecimal for bytes in the state files; `-` for none.
enum Hex {
    static func encode(_ bytes: [UInt8]) -> String {
        if bytes.isEmpty { return "-" }
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func decode(_ text: Substring) -> [UInt8]? {
        if text == "-" { return [] }
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 2)
        var i = 0
        while i < chars.count {
            guard let high = value(chars[i]), let low = value(chars[i + 1]) else { return nil }
            out.append(high << 4 | low)
            i += 2
        }
        return out
    }
}
