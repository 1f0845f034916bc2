/// The recency of a container, compact enough to persist often: one stamp
/// per file, by identity, plus the clock, so stamps stay monotone across
/// remounts even when the last-used files are gone.
///
/// The identities are backing device and inode numbers; the adapter should
/// drop a snapshot whose device no longer matches the container's.
public struct RecencySnapshot: Equatable, Sendable {
    public struct Record: Equatable, Sendable {
        public var id: EntryID
        public var lastUsed: UInt64

        public init(id: EntryID, lastUsed: UInt64) {
            self.id = id
            self.lastUsed = lastUsed
        }
    }

    public var clock: UInt64
    public var records: [Record]

    public init(clock: UInt64, records: [Record]) {
        self.clock = clock
        self.records = records
    }
}
