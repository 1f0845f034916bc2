/// Reads, all O(1) (a file's with several names, O(names)).
extension Ledger {
    /// The recursive totals of a directory.
    public func totals(of id: EntryID) throws(PurgeCoreError) -> Totals {
        directories[Int(try directorySlot(id))].totals
    }

    public func file(_ id: EntryID) throws(PurgeCoreError) -> FileInfo {
        let f = try fileSlot(id)
        let record = files[Int(f)]
        let state = purgeState(f)
        let group = state.group
        return FileInfo(
            size: record.size,
            allocated: record.allocated,
            cloneSavings: cloneSavings[f] ?? 0,
            lastUsed: record.lastUsed,
            links: record.isLinked ? 1 + (extraLinks[f]?.count ?? 0) : 0,
            openCount: Int(openCounts[f] ?? 0),
            isPinned: record.flags.contains(.pinned),
            isProtectedByPin: state.pinned,
            isInZone: state.inZone,
            isCandidate: state.candidate,
            isTombstoned: state.tombstoned,
            group: group == noSlot ? nil : directories[Int(group)].id)
    }

    /// Whether a purge may ever take file `id`: every name in a zone, not
    /// pinned (open or not). False for an unknown file.
    public func isPurgeable(_ id: EntryID) -> Bool {
        guard let f = try? fileSlot(id) else { return false }
        let state = purgeState(f)
        return state.inZone && !state.pinned
    }

    public func directory(_ id: EntryID) throws(PurgeCoreError) -> DirectoryInfo {
        let record = directories[Int(try directorySlot(id))]
        return DirectoryInfo(
            totals: record.totals,
            isZoneRoot: record.flags.contains(.zoneRoot),
            isInZone: record.flags.contains(.inZone),
            isPinned: record.flags.contains(.pinned),
            isProtectedByPin: record.flags.contains(.pinnedBelow),
            isGroup: record.flags.contains(.group),
            isTombstone: record.flags.contains(.tombstone),
            group: record.group == noSlot ? nil : directories[Int(record.group)].id,
            lastUsed: record.lastUsed)
    }

    /// The directories holding the file's names (one entry per name).
    public func linkDirectories(of id: EntryID) throws(PurgeCoreError) -> [EntryID] {
        linkDirectories(try fileSlot(id))
    }

    func linkDirectories(_ f: UInt32) -> [EntryID] {
        let record = files[Int(f)]
        guard record.isLinked else { return [] }
        return ([record.parent] + (extraLinks[f] ?? [])).map { directories[Int($0)].id }
    }

    /// Number of items (files, or whole groups) in the purge order.
    public var purgeOrderCount: Int { index.count }
}
