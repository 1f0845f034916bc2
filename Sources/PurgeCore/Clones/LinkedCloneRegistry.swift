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
/// Stored as lines (`RegistryStore<LinkedCloneRegistry>` keeps a snapshot and appends the
/// changes, `takeChanges`): `next N`,
/// `group ID DEVICE INODE CONTENT HANDLETYPE HANDLEHEX RETIRINGDEVICE RETIRINGINODE`
/// (`- -` when no backing is being retired),
/// `member DEVICE INODE GROUP ORDER PARENTDEVICE PARENTINODE NAMEHEX` (`-`: no name),
/// `moving DEVICE INODE PARENTDEVICE PARENTINODE NAMEHEX` (a rename of the
/// member's name under way, see `beginMove`), `drop-member DEVICE INODE` and
/// `drop-group ID`; a later line about the same group or member replaces an
/// earlier one (a `member` line ends a move).
public struct LinkedCloneRegistry: JournaledRecords {
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
    /// Members whose name a rename is changing, by the name they are taking
    /// (`beginMove`): until the rename is known done or failed, the member is
    /// whichever of its two names holds its group's data.
    public private(set) var moving: [EntryID: Name] = [:]
    private var byMovingName: [Name: EntryID] = [:]
    private var next: UInt64 = firstID
    /// Lines describing the changes since `takeChanges`.
    private var changes: [UInt8] = []
    private var recording = true

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

    /// The identity of the name `name` of backing file `backing`: the
    /// member's (its anchor's) when the name is a registered clone of a
    /// group's backing, else the backing file's own. The one rule every
    /// path that turns a name into an identity follows (the walk at mount,
    /// lookup, readdir, create, rename, unlink, the purger). `regularFile`
    /// false (known from a stat to be no regular file): always its own.
    /// A name a member is being renamed to (`moving`) is the member's when
    /// it holds the member's group's data (the rename was done); a name is
    /// never taken for a member of another group's data.
    public func identity(of backing: EntryID, regularFile: Bool = true, named name: Name) -> EntryID {
        guard regularFile, !isEmpty, let group = byBacking[backing] else { return backing }
        if let id = byName[name], members[id]?.group == group { return id }
        if let id = byMovingName[name], members[id]?.group == group { return id }
        return backing
    }

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
            put(group: group, Group(backing: backing, handleType: handle.0, handle: handle.1, content: group, retiring: nil))
        }
        if let holder = byName[name] { unname(holder) }
        put(member: anchor, Member(group: group, order: newID(), parent: name.parent, name: name.name))
    }

    /// A member's name moved (rename through the mount); a member that held
    /// the new name loses it.
    public mutating func move(_ id: EntryID, to name: Name) {
        guard var member = members[id] else { return }
        if let holder = byName[name], holder != id { unname(holder) }
        member.parent = name.parent
        member.name = name.name
        put(member: id, member)
    }

    /// A rename of member `id`'s name to `name` is about to be made: recorded
    /// first, so that a daemon killed before it could record the outcome
    /// (`move`, or `endMove` when the rename failed) leaves the member
    /// known under whichever name holds its data (`identity`, and the mount's
    /// `settleMove`), not one more name of its group's data.
    public mutating func beginMove(_ id: EntryID, to name: Name) {
        guard members[id] != nil else { return }
        putMoving(id, name)
    }

    /// The rename `beginMove` announced did not happen: the member keeps its name.
    public mutating func endMove(_ id: EntryID) {
        guard let member = members[id], moving[id] != nil else { return }
        put(member: id, member)
    }

    /// A member lost its name but may still be open.
    public mutating func unname(_ id: EntryID) {
        guard var member = members[id] else { return }
        member.name = []
        put(member: id, member)
    }

    /// Forgets a member; a group left with no member is dissolved (its
    /// backing has only primary names then, or none).
    public mutating func remove(_ id: EntryID) {
        guard let member = members[id] else { return }
        drop(member: id)
        if byGroup[member.group]?.isEmpty ?? true { drop(group: member.group) }
    }

    /// The group's data moves to a new backing (its primary is about to be
    /// modified). Names still linked to the retiring backing stay members
    /// until moved.
    public mutating func replaceBacking(of group: UInt64, with backing: EntryID, handle: (Int32, [UInt8])) {
        guard var record = groups[group] else { return }
        record.retiring = record.backing
        record.backing = backing
        record.handleType = handle.0
        record.handle = handle.1
        put(group: group, record)
    }

    /// Every member has been moved to the new backing.
    public mutating func retired(_ group: UInt64) {
        guard var record = groups[group], record.retiring != nil else { return }
        record.retiring = nil
        put(group: group, record)
    }

    /// The changes since the last call, as lines to append to the stored
    /// registry (`decoding` reads a snapshot followed by such lines).
    public mutating func takeChanges() -> [UInt8] {
        defer { changes = [] }
        return changes
    }

    // MARK: The four changes everything above is made of (each recorded)

    private mutating func put(group id: UInt64, _ record: Group) {
        if let old = groups[id] {
            byBacking[old.backing] = nil
            if let retiring = old.retiring { byBacking[retiring] = nil }
        }
        groups[id] = record
        byBacking[record.backing] = id
        if let retiring = record.retiring { byBacking[retiring] = id }
        note(Self.line(group: id, record))
    }

    private mutating func drop(group id: UInt64) {
        guard let record = groups.removeValue(forKey: id) else { return }
        byBacking[record.backing] = nil
        if let retiring = record.retiring { byBacking[retiring] = nil }
        byGroup[id] = nil
        note("drop-group \(id)\n")
    }

    private mutating func put(member id: EntryID, _ member: Member) {
        if let old = members[id] {
            unindex(id, old)
            byGroup[old.group]?.remove(id)
        }
        clearMoving(id)
        members[id] = member
        byGroup[member.group, default: []].insert(id)
        if !member.name.isEmpty { byName[Name(parent: member.parent, name: member.name)] = id }
        note(Self.line(member: id, member))
    }

    private mutating func drop(member id: EntryID) {
        guard let member = members.removeValue(forKey: id) else { return }
        unindex(id, member)
        byGroup[member.group]?.remove(id)
        clearMoving(id)
        note("drop-member \(id.device) \(id.inode)\n")
    }

    private mutating func putMoving(_ id: EntryID, _ name: Name) {
        clearMoving(id)
        moving[id] = name
        byMovingName[name] = id
        note(Self.line(moving: id, name))
    }

    private mutating func clearMoving(_ id: EntryID) {
        guard let name = moving.removeValue(forKey: id) else { return }
        if byMovingName[name] == id { byMovingName[name] = nil }
    }

    private mutating func unindex(_ id: EntryID, _ member: Member) {
        let name = Name(parent: member.parent, name: member.name)
        if byName[name] == id { byName[name] = nil }
    }

    private mutating func note(_ line: String) {
        if recording { changes += Array(line.utf8) }
    }

    // MARK: Stored form

    private static func line(group id: UInt64, _ g: Group) -> String {
        let retiring = g.retiring.map { "\($0.device) \($0.inode)" } ?? "- -"
        return "group \(id) \(g.backing.device) \(g.backing.inode) \(g.content) \(g.handleType) \(Hex.encode(g.handle)) \(retiring)\n"
    }

    private static func line(member id: EntryID, _ m: Member) -> String {
        "member \(id.device) \(id.inode) \(m.group) \(m.order) \(m.parent.device) \(m.parent.inode) \(Hex.encode(m.name))\n"
    }

    private static func line(moving id: EntryID, _ name: Name) -> String {
        "moving \(id.device) \(id.inode) \(name.parent.device) \(name.parent.inode) \(Hex.encode(name.name))\n"
    }

    /// The whole registry, as a snapshot.
    public var encoded: [UInt8] {
        var text = "next \(next)\n"
        for (id, g) in groups.sorted(by: { $0.key < $1.key }) { text += Self.line(group: id, g) }
        for (id, m) in members.sorted(by: { $0.key < $1.key }) { text += Self.line(member: id, m) }
        for (id, name) in moving.sorted(by: { $0.key < $1.key }) { text += Self.line(moving: id, name) }
        return Array(text.utf8)
    }

    /// Parses a snapshot, optionally followed by appended changes; nil when
    /// a line is malformed or names a missing group. An unfinished last line
    /// (no newline: appending was cut short) is left out.
    public init?(decoding data: [UInt8]) {
        recording = false
        defer { recording = true }
        for f in JournalLines.complete(data) {
            if f.count == 2, f[0] == "next", let n = UInt64(f[1]) {
                next = max(n, Self.firstID)
            } else if f.count == 9, f[0] == "group", let id = UInt64(f[1]), let device = UInt64(f[2]), let inode = UInt64(f[3]),
                      let content = UInt64(f[4]), let type = Int32(f[5]), let handle = Hex.decode(f[6]) {
                var retiring: EntryID?
                if f[7] != "-" {
                    guard let d = UInt64(f[7]), let i = UInt64(f[8]) else { return nil }
                    retiring = EntryID(device: d, inode: i)
                } else if f[8] != "-" {
                    return nil
                }
                put(group: id, Group(backing: EntryID(device: device, inode: inode), handleType: type, handle: handle,
                                     content: content, retiring: retiring))
            } else if f.count == 8, f[0] == "member", let device = UInt64(f[1]), let inode = UInt64(f[2]),
                      let group = UInt64(f[3]), let order = UInt64(f[4]), let parentDevice = UInt64(f[5]),
                      let parentInode = UInt64(f[6]), let name = Hex.decode(f[7]), groups[group] != nil {
                put(member: EntryID(device: device, inode: inode),
                    Member(group: group, order: order, parent: EntryID(device: parentDevice, inode: parentInode), name: name))
            } else if f.count == 6, f[0] == "moving", let device = UInt64(f[1]), let inode = UInt64(f[2]),
                      let parentDevice = UInt64(f[3]), let parentInode = UInt64(f[4]), let name = Hex.decode(f[5]), !name.isEmpty {
                let id = EntryID(device: device, inode: inode)
                if members[id] != nil { putMoving(id, Name(parent: EntryID(device: parentDevice, inode: parentInode), name: name)) }
            } else if f.count == 3, f[0] == "drop-member", let device = UInt64(f[1]), let inode = UInt64(f[2]) {
                drop(member: EntryID(device: device, inode: inode))
            } else if f.count == 2, f[0] == "drop-group", let id = UInt64(f[1]) {
                drop(group: id)
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

    public static func == (a: LinkedCloneRegistry, b: LinkedCloneRegistry) -> Bool {
        a.groups == b.groups && a.members == b.members && a.moving == b.moving && a.next == b.next
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
