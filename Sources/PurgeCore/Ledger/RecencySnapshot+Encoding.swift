/// A flat little-endian byte form: a magic and version, the clock, the
/// record count, then 24 bytes per record (device, inode, stamp). No
/// Foundation, and a truncated or foreign file is refused, not half-read.
extension RecencySnapshot {
    static let magic: UInt64 = 0x3176_6365_7267_7270 // "prgrecv1", little-endian

    public func encoded() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24 + 24 * records.count)
        func put(_ value: UInt64) {
            for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
        }
        put(RecencySnapshot.magic)
        put(clock)
        put(UInt64(records.count))
        for record in records {
            put(record.id.device)
            put(record.id.inode)
            put(record.lastUsed)
        }
        return bytes
    }

    public init(decoding bytes: [UInt8]) throws(PurgeCoreError) {
        var offset = 0
        func take() throws(PurgeCoreError) -> UInt64 {
            guard offset + 8 <= bytes.count else { throw .malformedSnapshot }
            var value: UInt64 = 0
            for i in 0..<8 { value |= UInt64(bytes[offset + i]) << UInt64(8 * i) }
            offset += 8
            return value
        }
        guard try take() == RecencySnapshot.magic else { throw .malformedSnapshot }
        let clock = try take()
        let count = try take()
        guard count <= UInt64(bytes.count - offset) / 24, UInt64(bytes.count - offset) == count * 24 else {
            throw .malformedSnapshot
        }
        var records: [Record] = []
        records.reserveCapacity(Int(count))
        for _ in 0..<count {
            let id = EntryID(device: try take(), inode: try take())
            records.append(Record(id: id, lastUsed: try take()))
        }
        self.init(clock: clock, records: records)
    }
}

extension RecencySnapshot {
    /// Reads a journal: encoded snapshots appended one after another. Stops
    /// at the first block that is cut short or foreign (the tail of a write a
    /// crash interrupted), keeping every whole block before it.
    public static func decodingJournal(_ bytes: [UInt8]) -> [RecencySnapshot] {
        var blocks: [RecencySnapshot] = []
        var offset = 0
        while offset + 24 <= bytes.count {
            func word(_ at: Int) -> UInt64 {
                var value: UInt64 = 0
                for i in 0..<8 { value |= UInt64(bytes[at + i]) << UInt64(8 * i) }
                return value
            }
            guard word(offset) == magic else { break }
            let count = word(offset + 16)
            guard count <= UInt64(bytes.count - offset - 24) / 24 else { break }
            let end = offset + 24 + Int(count) * 24
            guard let block = try? RecencySnapshot(decoding: Array(bytes[offset..<end])) else { break }
            blocks.append(block)
            offset = end
        }
        return blocks
    }

    /// This snapshot with `later`'s stamps laid over it (a later stamp for
    /// the same file wins), and the later clock.
    public func merging(_ later: RecencySnapshot) -> RecencySnapshot {
        var stamps: [EntryID: UInt64] = [:]
        stamps.reserveCapacity(records.count + later.records.count)
        for record in records { stamps[record.id] = record.lastUsed }
        for record in later.records { stamps[record.id] = record.lastUsed }
        return RecencySnapshot(
            clock: Swift.max(clock, later.clock),
            records: stamps.map { Record(id: $0.key, lastUsed: $0.value) })
    }
}
