/// Which files are clones of which: clone groups by backing identity, each
/// member with its content identifier and a persistent handle to reopen it
/// (the walk at mount knows no clones). Stored as lines (a snapshot and the
/// changes appended since, see `JournaledRecords`): `next N`,
/// `member DEVICE INODE GROUP CONTENT ORDER HANDLETYPE HANDLEHEX` and
/// `drop DEVICE INODE`; a later line about a member replaces an earlier one.
///
/// Identifiers handed out here start at 2^63, above any inode number, so a
/// file outside every group can use its inode number as its content id.
public struct CloneRegistry: JournaledRecords {
    public struct Member: Equatable, Sendable {
        public var group: UInt64
        /// Equal for members that still hold the content they were cloned with.
        public var content: UInt64
        /// Charging order in the group: the original first.
        public var order: UInt64
        public var handleType: Int32
        public var handle: [UInt8]
    }

    public static let fileName = "clones"
    static let firstID: UInt64 = 1 << 63

    public private(set) var members: [EntryID: Member] = [:]
    /// Members of each group: a group's reads cost its size, not the registry's.
    private var byGroup: [UInt64: Set<EntryID>] = [:]
    private var next: UInt64 = firstID
    private var changes: [UInt8] = []
    private var recording = true

    public init() {}

    private mutating func newID() -> UInt64 {
        defer { next += 1 }
        return next
    }

    public func contains(_ id: EntryID) -> Bool { members[id] != nil }

    /// `user.purgefs.content_id`.
    public func contentID(of id: EntryID) -> UInt64 { members[id]?.content ?? id.inode }

    /// The members of `id`'s group in charging order (empty when it is in none).
    public func group(of id: EntryID) -> [EntryID] {
        guard let group = members[id]?.group else { return [] }
        return (byGroup[group] ?? []).sorted { members[$0]!.order < members[$1]!.order }
    }

    /// The members of group `group` in charging order.
    public func members(ofGroup group: UInt64) -> [EntryID] {
        (byGroup[group] ?? []).sorted { members[$0]!.order < members[$1]!.order }
    }

    /// Records `destination` as a fresh clone of `source`.
    public mutating func addClone(source: EntryID, sourceHandle: (Int32, [UInt8]),
                                  destination: EntryID, destinationHandle: (Int32, [UInt8])) {
        if members[source] == nil {
            let group = newID()
            put(source, Member(group: group, content: group, order: newID(), handleType: sourceHandle.0, handle: sourceHandle.1))
        }
        let original = members[source]!
        put(destination, Member(group: original.group, content: original.content, order: newID(),
                                handleType: destinationHandle.0, handle: destinationHandle.1))
    }

    /// A member's content changed: it gets a content id of its own, unless
    /// no other member has its current one. Returns whether anything changed.
    @discardableResult
    public mutating func modified(_ id: EntryID) -> Bool {
        guard var member = members[id] else { return false }
        let alike = (byGroup[member.group] ?? []).contains { $0 != id && members[$0]!.content == member.content }
        guard alike else { return false }
        member.content = newID()
        put(id, member)
        return true
    }

    /// Forgets a member; a group left with one member is dissolved.
    /// Returns the members left in its group.
    @discardableResult
    public mutating func remove(_ id: EntryID) -> [EntryID] {
        guard let member = members[id] else { return [] }
        drop(id)
        let rest = Array(byGroup[member.group] ?? [])
        if rest.count == 1 {
            drop(rest[0])
            return []
        }
        return rest
    }

    public mutating func takeChanges() -> [UInt8] {
        defer { changes = [] }
        return changes
    }

    // MARK: The two changes everything above is made of (each recorded)

    private mutating func put(_ id: EntryID, _ member: Member) {
        if let old = members[id] { byGroup[old.group]?.remove(id) }
        members[id] = member
        byGroup[member.group, default: []].insert(id)
        if recording { changes += Array(Self.line(id, member).utf8) }
    }

    private mutating func drop(_ id: EntryID) {
        guard let member = members.removeValue(forKey: id) else { return }
        byGroup[member.group]?.remove(id)
        if byGroup[member.group]?.isEmpty == true { byGroup[member.group] = nil }
        if recording { changes += Array("drop \(id.device) \(id.inode)\n".utf8) }
    }

    // MARK: Stored form

    private static func line(_ id: EntryID, _ m: Member) -> String {
        "member \(id.device) \(id.inode) \(m.group) \(m.content) \(m.order) \(m.handleType) \(Hex.encode(m.handle))\n"
    }

    public var encoded: [UInt8] {
        var text = "next \(next)\n"
        for (id, m) in members.sorted(by: { $0.key < $1.key }) { text += Self.line(id, m) }
        return Array(text.utf8)
    }

    /// Parses a snapshot and the changes after it; nil when a line is
    /// malformed (an unfinished last line is left out).
    public init?(decoding data: [UInt8]) {
        recording = false
        defer { recording = true }
        for f in JournalLines.complete(data) {
            if f.count == 2, f[0] == "next", let n = UInt64(f[1]) {
                next = max(n, Self.firstID)
            } else if f.count == 8, f[0] == "member", let device = UInt64(f[1]), let inode = UInt64(f[2]),
                      let group = UInt64(f[3]), let content = UInt64(f[4]), let order = UInt64(f[5]),
                      let type = Int32(f[6]), let handle = Hex.decode(f[7]) {
                put(EntryID(device: device, inode: inode),
                    Member(group: group, content: content, order: order, handleType: type, handle: handle))
            } else if f.count == 3, f[0] == "drop", let device = UInt64(f[1]), let inode = UInt64(f[2]) {
                drop(EntryID(device: device, inode: inode))
            } else {
                return nil
            }
        }
        // Identifiers handed out later never repeat a stored one.
        let highest = members.values.map { max($0.group, $0.content, $0.order) }.max().map { $0 + 1 } ?? 0
        next = max(next, highest)
    }

    public static func == (a: CloneRegistry, b: CloneRegistry) -> Bool {
        a.members == b.members && a.next == b.next
    }
}
