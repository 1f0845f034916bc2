/// What decides purging, besides the tree: zones, pins, groups, tombstones
/// and open handles.
extension Ledger {
    /// Marks a directory as a purgeable zone root, or clears the mark. The
    /// adapter marks the configured zones at mount, after checking each is a
    /// real directory inside the container; the mark travels with the
    /// directory if it is renamed, so the adapter clears it when the zone's
    /// path no longer names it.
    public mutating func setZone(_ id: EntryID, _ isZone: Bool) throws(PurgeCoreError) {
        try setDirectoryFlag(.zoneRoot, isZone, on: directorySlot(id))
    }

    /// `user.purgefs.pinned`: a pinned file is never purged; a pinned
    /// directory protects its whole subtree.
    public mutating func setPinned(_ id: EntryID, _ pinned: Bool) throws(PurgeCoreError) {
        guard let ref = ref(of: id) else { throw .unknownEntry(id) }
        if ref.isDirectory {
            setDirectoryFlag(.pinned, pinned, on: ref.slot)
            return
        }
        let f = ref.slot
        guard files[Int(f)].flags.contains(.pinned) != pinned else { return }
        changeFile(f) { ledger in
            if pinned { ledger.files[Int(f)].flags.insert(.pinned) } else { ledger.files[Int(f)].flags.remove(.pinned) }
        }
    }

    /// `user.purgefs.group`: inside a zone, the directory's whole subtree is
    /// purged as one item, aged by its most recently used file. A group
    /// inside another group is part of the outer one.
    public mutating func setGroup(_ id: EntryID, _ isGroup: Bool) throws(PurgeCoreError) {
        try setDirectoryFlag(.group, isGroup, on: directorySlot(id))
    }

    /// `user.purgefs.tombstone`: files anywhere below the directory are
    /// truncated to zero when purged instead of deleted, so their names stay.
    public mutating func setTombstone(_ id: EntryID, _ isTombstone: Bool) throws(PurgeCoreError) {
        try setDirectoryFlag(.tombstone, isTombstone, on: directorySlot(id))
    }

    /// Counts an open handle on the file (`open`, `create`): an open file is
    /// never a candidate. This is not a use; call `markUsed` for that.
    public mutating func open(_ id: EntryID) throws(PurgeCoreError) {
        let f = try fileSlot(id)
        changeFile(f) { ledger in
            ledger.openCounts[f, default: 0] += 1
            ledger.files[Int(f)].flags.insert(.open)
        }
    }

    /// Drops an open handle (`release`). A file with no name left goes at
    /// its last close. A close with no open counted throws `notOpen` and
    /// changes nothing: its open found no entry (one made since, behind the
    /// mount or by a purge's settling), which the caller logs as drift; the
    /// daemon must not die of its figures.
    public mutating func close(_ id: EntryID) throws(PurgeCoreError) {
        let f = try fileSlot(id)
        guard let count = openCounts[f] else { throw .notOpen(id) }
        changeFile(f) { ledger in
            if count == 1 {
                ledger.openCounts[f] = nil
                ledger.files[Int(f)].flags.remove(.open)
            } else {
                ledger.openCounts[f] = count - 1
            }
        }
        if !files[Int(f)].isLinked && count == 1 { freeFile(f) }
    }

    private mutating func setDirectoryFlag(_ flag: DirectoryRecord.Flags, _ on: Bool, on x: UInt32) {
        guard directories[Int(x)].flags.contains(flag) != on else { return }
        changeSubtree(x) { ledger in
            if on {
                ledger.directories[Int(x)].flags.insert(flag)
                // A new group is aged afresh by the files it now holds.
                if flag == .group { ledger.directories[Int(x)].lastUsed = 0 }
            } else {
                ledger.directories[Int(x)].flags.remove(flag)
            }
        }
    }
}
