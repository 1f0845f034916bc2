/// Every sparse member's block map, as the journal has it (`durable`) and
/// the changes made since that are not durable yet (`pending`).
///
/// A member's pending records become durable only at its sync: the I/O
/// layer syncs the anchor's data first, then appends `takeChanges(of:)` to
/// `block-maps.journal` and syncs it, so no durable record claims a block
/// whose data is not durable. A kill loses the pending records
/// (`forgetPending`); what `decode` reads back is the durable book.
///
/// Stored through `RegistryStore` (an epoch line, the snapshot `encoded`,
/// then the journal's lines); `decode` refuses a malformed line with its
/// number and ignores a last line a crash cut short.
public struct BlockMapBook: JournaledRecords {
    public struct Entry: Equatable, Sendable {
        public var map: BlockMap
        /// How the anchor reopens (`open_by_handle_at`): `name_to_handle_at`'s type and bytes.
        public var handleType: Int32
        public var handle: [UInt8]
        public init(map: BlockMap, handleType: Int32, handle: [UInt8]) {
            self.map = map
            self.handleType = handleType
            self.handle = handle
        }
    }

    public static let fileName = "block-maps"

    public private(set) var durable: [EntryID: Entry] = [:]
    /// Each member's records not yet durable, in the order they were made.
    private var pending: [EntryID: [BlockMapRecord]] = [:]

    public init() {}

    public init?(decoding data: [UInt8]) {
        guard let book = try? Self.decode(data) else { return nil }
        self = book
    }

    // MARK: Reading

    /// A member's map with its pending records applied.
    public func current(_ member: EntryID) -> Entry? {
        var entries = [member: durable[member]].compactMapValues { $0 }
        for record in pending[member] ?? [] { Self.applyMade(record, to: &entries) }
        return entries[member]
    }

    public func pendingRecords(of member: EntryID) -> [BlockMapRecord] { pending[member] ?? [] }
    public var hasPending: Bool { !pending.isEmpty }
    public var membersWithPending: [EntryID] { pending.keys.sorted() }

    /// Durable members by base.
    public var membersByBase: [EntryID: [EntryID]] {
        var result: [EntryID: [EntryID]] = [:]
        for (member, entry) in durable { result[entry.map.base, default: []].append(member) }
        return result.mapValues { $0.sorted() }
    }

    // MARK: Changes

    /// Queues `record` as pending for its member (adjacent `own` records
    /// merge). A `start` replaces the member's pending records: it replaces
    /// whatever map they changed.
    public mutating func record(_ record: BlockMapRecord) {
        let member = record.member
        if case .start = record {
            pending[member] = [record]
            return
        }
        if case .own(_, let blocks) = record, case .own(_, let last)? = pending[member]?.last,
           last.upperBound == blocks.lowerBound || blocks.upperBound == last.lowerBound {
            let merged = min(last.lowerBound, blocks.lowerBound)..<max(last.upperBound, blocks.upperBound)
            pending[member]![pending[member]!.count - 1] = .own(member: member, blocks: merged)
            return
        }
        pending[member, default: []].append(record)
    }

    /// Member `member` is gone or plain again: its pending records are
    /// replaced by a `drop` when the durable book has a map of it, and
    /// forgotten when it has none (nothing durable to undo). Returns
    /// whether a `drop` is pending (to commit).
    public mutating func recordDrop(of member: EntryID) -> Bool {
        guard durable[member] != nil else {
            pending[member] = nil
            return false
        }
        pending[member] = [.drop(member: member)]
        return true
    }

    /// The lines of `member`'s pending records, now counted durable: call it
    /// (under the journal's lock) once the anchor's data is synced, and
    /// append what it returns.
    public mutating func takeChanges(of member: EntryID) -> [UInt8] {
        guard let records = pending.removeValue(forKey: member) else { return [] }
        var lines: [UInt8] = []
        for record in records {
            Self.applyMade(record, to: &durable)
            lines += record.line
        }
        return lines
    }

    /// Every member's pending lines (unmount, after every anchor is synced).
    public mutating func takeChanges() -> [UInt8] {
        membersWithPending.reduce(into: []) { lines, member in lines += takeChanges(of: member) }
    }

    /// What a kill does: the pending records are lost.
    public mutating func forgetPending() { pending = [:] }

    /// Applies `records` as durable at once (replay's repairs, tests).
    public mutating func applyDurable(_ records: [BlockMapRecord]) throws(BlockMapRecord.Malformed) {
        for record in records { try Self.apply(record, to: &durable) }
    }

    // MARK: Stored form

    /// The durable book as `start` and `own` lines, members in order.
    public var encoded: [UInt8] {
        var lines: [UInt8] = []
        for member in durable.keys.sorted() {
            let entry = durable[member]!
            lines += BlockMapRecord.start(
                member: member, base: entry.map.base, sharedLength: entry.map.sharedLength,
                handleType: entry.handleType, handle: entry.handle, stamp: entry.map.baseStamp).line
            for blocks in entry.map.own.ranges { lines += BlockMapRecord.own(member: member, blocks: blocks).line }
        }
        return lines
    }

    /// The durable book from a snapshot's and journal's lines (without their
    /// epoch lines). A last line without its newline is ignored (an append a
    /// crash cut short); any other line that does not parse, or says what
    /// cannot be (an `own` range past `sharedLength`, a record about an
    /// unknown member, a `sharedLength` raised), is refused with its number.
    public static func decode(_ data: [UInt8]) throws(BlockMapRecord.Malformed) -> BlockMapBook {
        var book = BlockMapBook()
        var lineNumber = 0
        var start = data.startIndex
        while let end = data[start...].firstIndex(of: UInt8(ascii: "\n")) {
            lineNumber += 1
            do throws(BlockMapRecord.Malformed) {
                try apply(try BlockMapRecord.parse(line: data[start..<end]), to: &book.durable)
            } catch {
                throw BlockMapRecord.Malformed(line: lineNumber, error.reason)
            }
            start = end + 1
        }
        return book
    }

    /// Applies a record the live code made (valid by construction: a bug traps).
    private static func applyMade(_ record: BlockMapRecord, to entries: inout [EntryID: Entry]) {
        do {
            try apply(record, to: &entries)
        } catch {
            preconditionFailure("a block map record that cannot apply: \(record): \(error)")
        }
    }

    static func apply(_ record: BlockMapRecord, to entries: inout [EntryID: Entry]) throws(BlockMapRecord.Malformed) {
        let member = record.member
        if case .start(_, let base, let length, let type, let handle, let stamp) = record {
            entries[member] = Entry(map: BlockMap(base: base, sharedLength: length, baseStamp: stamp), handleType: type, handle: handle)
            return
        }
        guard var entry = entries[member] else { throw BlockMapRecord.Malformed("no map for member \(member)") }
        switch record {
        case .start:
            return
        case .own(_, let blocks):
            guard blocks.upperBound <= entry.map.sharedBlocks else {
                throw BlockMapRecord.Malformed("own blocks \(blocks) past the shared length \(entry.map.sharedLength)")
            }
            entry.map.makeOwn(blocks)
        case .sharedLength(_, let length):
            guard length <= entry.map.sharedLength else {
                throw BlockMapRecord.Malformed("shared length raised from \(entry.map.sharedLength) to \(length)")
            }
            entry.map.lowerSharedLength(to: length)
        case .rebase(_, let base, let stamp):
            entry.map.base = base
            entry.map.baseStamp = stamp
        case .stamp(_, let stamp):
            entry.map.baseStamp = stamp
        case .drop:
            entries[member] = nil
            return
        }
        entries[member] = entry
    }
}
