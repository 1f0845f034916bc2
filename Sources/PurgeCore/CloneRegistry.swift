/// Which files are clones of which: clone groups by backing identity, each
/// member with its content identifier and a persistent handle to reopen it
/// (the walk at mount knows no clones). Kept in the state directory as
/// `clones`, lines of `next N` and
/// `member DEVICE INODE GROUP CONTENT ORDER HANDLETYPE HANDLEHEX`.
///
/// Identifiers handed out here start at 2^63, above any inode number, so a
/// file outside every group can use its inode number as its content id.
public struct CloneRegistry: Equatable, Sendable {
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
    private var next: UInt64 = firstID

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
        return members.filter { $0.value.group == group }.sorted { $0.value.order < $1.value.order }.map(\.key)
    }

    /// Records `destination` as a fresh clone of `source`.
    public mutating func addClone(source: EntryID, sourceHandle: (Int32, [UInt8]),
                                  destination: EntryID, destinationHandle: (Int32, [UInt8])) {
        if members[source] == nil {
            let group = newID()
            members[source] = Member(group: group, content: group, order: newID(),
                                     handleType: sourceHandle.0, handle: sourceHandle.1)
        }
        let original = members[source]!
        members[destination] = Member(group: original.group, content: original.content, order: newID(),
                                      handleType: destinationHandle.0, handle: destinationHandle.1)
    }

    /// A member's content changed: it gets a content id of its own, unless
    /// no other member has its current one. Returns whether anything changed.
    @discardableResult
    public mutating func modified(_ id: EntryID) -> Bool {
        guard let member = members[id] else { return false }
        let alike = members.contains { $0.key != id && $0.value.content == member.content }
        guard alike else { return false }
        members[id]!.content = newID()
        return true
    }

    /// Forgets a member; a group left with one member is dissolved.
    /// Returns the members left in its group.
    @discardableResult
    public mutating func remove(_ id: EntryID) -> [EntryID] {
        guard let member = members.removeValue(forKey: id) else { return [] }
        let rest = members.filter { $0.value.group == member.group }.map(\.key)
        if rest.count == 1 { members[rest[0]] = nil; return [] }
        return rest
    }

    public var encoded: [UInt8] {
        var text = "next \(next)\n"
        for (id, m) in members.sorted(by: { $0.key < $1.key }) {
            text += "member \(id.device) \(id.inode) \(m.group) \(m.content) \(m.order) \(m.handleType) \(Hex.encode(m.handle))\n"
        }
        return Array(text.utf8)
    }

    /// Parses the file; nil when any line is malformed.
    public init?(decoding data: [UInt8]) {
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            let f = line.split(separator: " ")
            if f.count == 2, f[0] == "next", let n = UInt64(f[1]) { next = max(n, Self.firstID); continue }
            guard f.count == 8, f[0] == "member", let device = UInt64(f[1]), let inode = UInt64(f[2]),
                  let group = UInt64(f[3]), let content = UInt64(f[4]), let order = UInt64(f[5]),
                  let type = Int32(f[6]), let handle = Hex.decode(f[7])
            else { return nil }
            members[EntryID(device: device, inode: inode)] =
                Member(group: group, content: content, order: order, handleType: type, handle: handle)
        }
    }
}
