/// Uses, and recency across mounts.
extension Ledger {
    /// Records a use of the file (open, read or write through the mount) and
    /// returns its new stamp. O(log n).
    @discardableResult
    public mutating func markUsed(_ id: EntryID) throws(PurgeCoreError) -> UInt64 {
        let f = try fileSlot(id)
        let stamp = clock.next()
        restamp(f, stamp)
        return stamp
    }

    /// The stamp of every named file, for the adapter to persist. Restoring
    /// it in a later mount restores the purge order.
    public func recencySnapshot() -> RecencySnapshot {
        var records: [RecencySnapshot.Record] = []
        records.reserveCapacity(linkedFileCount)
        for record in files where record.flags.contains(.live) && record.isLinked {
            records.append(.init(id: record.id, lastUsed: record.lastUsed))
        }
        return RecencySnapshot(clock: clock.last, records: records)
    }

    /// Applies a snapshot from an earlier mount to the files known now
    /// (entries no longer present are ignored), and recomputes each group's
    /// age from its files. A restored stamp never ages a file below the one
    /// the walk gave it (its last modification or access): a file written
    /// while unmounted, or a new one that got a deleted file's inode number
    /// (ext4 reuses them at once), is not taken for the earlier record's.
    /// The clock moves past every restored stamp.
    /// Returns how many of the snapshot's stamps were applied.
    @discardableResult
    public mutating func restoreRecency(_ snapshot: RecencySnapshot) -> Int {
        clock.observe(snapshot.clock)
        var applied = 0
        for record in snapshot.records {
            guard let ref = ref(of: record.id), !ref.isDirectory else { continue }
            applied += 1
            let f = ref.slot
            let stamp = max(record.lastUsed, files[Int(f)].lastUsed)
            clock.observe(stamp)
            files[Int(f)].lastUsed = stamp
            let item = RecencyIndex.Item.file(f)
            if index.contains(item) { index.touch(item, stamp: stamp) }
        }
        for x in directories.indices where directories[x].group == UInt32(x) {
            directories[x].lastUsed = 0
        }
        for f in files.indices where files[f].flags.contains(.live) {
            let group = groupOf(UInt32(f))
            if group != noSlot && files[f].lastUsed > directories[Int(group)].lastUsed {
                directories[Int(group)].lastUsed = files[f].lastUsed
            }
        }
        for x in directories.indices {
            let item = RecencyIndex.Item.group(UInt32(x))
            if index.contains(item) { index.touch(item, stamp: directories[x].lastUsed) }
        }
        return applied
    }

    /// The stamps that changed since the last call, for the adapter to
    /// append to its journal: O(changes), not O(files), so saving often
    /// stays cheap on a large container.
    public mutating func takeRecencyChanges() -> RecencySnapshot {
        var records: [RecencySnapshot.Record] = []
        records.reserveCapacity(recencyChanges.count)
        for f in recencyChanges {
            files[Int(f)].flags.remove(.recencyChanged)
            let record = files[Int(f)]
            if record.flags.has(.live) && record.isLinked {
                records.append(.init(id: record.id, lastUsed: record.lastUsed))
            }
        }
        recencyChanges.removeAll(keepingCapacity: true)
        return RecencySnapshot(clock: clock.last, records: records)
    }

    /// Notes that file `f`'s stamp changed, once until the next `takeRecencyChanges`.
    mutating func noteRecencyChange(_ f: UInt32) {
        guard !files[Int(f)].flags.has(.recencyChanged) else { return }
        files[Int(f)].flags.insert(.recencyChanged)
        recencyChanges.append(f)
    }

    private mutating func restamp(_ f: UInt32, _ stamp: UInt64) {
        noteRecencyChange(f)
        files[Int(f)].lastUsed = stamp
        let item = RecencyIndex.Item.file(f)
        if index.contains(item) { index.touch(item, stamp: stamp) }
        let group = groupOf(f)
        if group != noSlot { raiseGroup(group, to: stamp) }
    }
}
