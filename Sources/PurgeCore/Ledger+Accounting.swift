/// How one file counts: its derived purge state, its contribution to the
/// totals above it, and the propagation of changes up the tree.
extension Ledger {
    // MARK: Derived state of a file

    /// Every name inside a purgeable zone. A file with one name outside a
    /// zone is never purged: deleting only its zone names would free nothing
    /// and purging must never reach outside a zone.
    func isInZone(_ f: UInt32) -> Bool {
        let record = files[Int(f)]
        guard record.isLinked, directories[Int(record.parent)].flags.contains(.inZone) else { return false }
        if record.flags.contains(.extraLinks) {
            for d in extraLinks[f]! where !directories[Int(d)].flags.contains(.inZone) { return false }
        }
        return true
    }

    /// Pinned on the file, or on any directory above any of its names.
    func isPinned(_ f: UInt32) -> Bool {
        let record = files[Int(f)]
        if record.flags.contains(.pinned) { return true }
        guard record.isLinked else { return false }
        if directories[Int(record.parent)].flags.contains(.pinnedBelow) { return true }
        if record.flags.contains(.extraLinks) {
            for d in extraLinks[f]! where directories[Int(d)].flags.contains(.pinnedBelow) { return true }
        }
        return false
    }

    /// Below a tombstone directory through any name: purging truncates it,
    /// so that name stays.
    func isTombstoned(_ f: UInt32) -> Bool {
        let record = files[Int(f)]
        guard record.isLinked else { return false }
        if directories[Int(record.parent)].flags.contains(.tombstoneBelow) { return true }
        if record.flags.contains(.extraLinks) {
            for d in extraLinks[f]! where directories[Int(d)].flags.contains(.tombstoneBelow) { return true }
        }
        return false
    }

    func isCandidate(_ f: UInt32) -> Bool {
        !files[Int(f)].flags.contains(.open) && isInZone(f) && !isPinned(f)
    }

    /// A candidate a purge would still change: a tombstoned file already
    /// truncated to nothing is left out of the purge order, or it would stay
    /// the oldest item forever.
    func hasPurgeWork(_ f: UInt32) -> Bool {
        guard isCandidate(f) else { return false }
        let record = files[Int(f)]
        return record.size > 0 || record.allocated > 0 || !isTombstoned(f)
    }

    /// The group the file is purged with: the group root of its first name's
    /// directory, when the file is in a zone.
    func groupOf(_ f: UInt32) -> UInt32 {
        guard isInZone(f) else { return noSlot }
        return directories[Int(files[Int(f)].parent)].group
    }

    /// What the file adds to each directory above it.
    func contribution(_ f: UInt32) -> Totals {
        let record = files[Int(f)]
        guard record.isLinked else { return .zero }
        let work = hasPurgeWork(f)
        return Totals(
            size: record.size,
            files: 1,
            allocated: record.allocated,
            purgeable: work ? record.allocated : 0,
            purgeableFiles: work ? 1 : 0,
            cloneSavings: record.flags.contains(.cloned) ? cloneSavings[f]! : 0)
    }

    // MARK: Propagation

    /// Replaces `old` by `new` in every directory above the file's names,
    /// each directory once even when several names lie below it.
    mutating func propagate(_ f: UInt32, removing old: Totals, adding new: Totals) {
        guard old != new else { return }
        let record = files[Int(f)]
        guard record.isLinked else { return }
        if !record.flags.contains(.extraLinks) {
            var d = record.parent
            while d != noSlot {
                directories[Int(d)].totals.replace(old, with: new)
                d = directories[Int(d)].parent
            }
            return
        }
        generation += 1
        let mark = generation
        for start in [record.parent] + extraLinks[f]! {
            var d = start
            while d != noSlot && directories[Int(d)].mark != mark {
                directories[Int(d)].mark = mark
                directories[Int(d)].totals.replace(old, with: new)
                d = directories[Int(d)].parent
            }
        }
    }

    /// Runs a change of one file and keeps everything derived from it in
    /// step: the totals above it, the unlinked-open bytes, the purge order.
    ///
    /// `relinks` says the change adds, removes or moves names; then the old
    /// contribution is taken out along the old names and the new one put in
    /// along the new names. Otherwise one walk replaces one by the other.
    mutating func changeFile(_ f: UInt32, relinks: Bool = false, _ change: (inout Ledger) -> Void) {
        let old = contribution(f)
        let oldGroup = groupOf(f)
        let oldWork = hasPurgeWork(f)
        let wasLinked = files[Int(f)].isLinked
        let oldAllocated = files[Int(f)].allocated
        if relinks { propagate(f, removing: old, adding: .zero) }
        change(&self)
        let new = contribution(f)
        propagate(f, removing: relinks ? .zero : old, adding: new)
        let isLinked = files[Int(f)].isLinked
        if !wasLinked { unlinkedOpenAllocated -= oldAllocated }
        if !isLinked { unlinkedOpenAllocated += files[Int(f)].allocated }
        if wasLinked != isLinked { linkedFileCount += isLinked ? 1 : -1 }
        syncIndex(f, oldGroup: oldGroup, oldWork: oldWork)
    }

    /// Runs a change that can alter the zone, pin, tombstone or group of a
    /// whole subtree (a setting on a directory, a move): every file with a
    /// name in the subtree is taken out of the totals, the change made and
    /// the settings below recomputed, then every file put back. O(files in
    /// the subtree × depth); such changes are rare.
    mutating func changeSubtree(_ d: UInt32, _ change: (inout Ledger) -> Void) {
        let members = filesTouching(d)
        var old: [(group: UInt32, work: Bool)] = []
        old.reserveCapacity(members.count)
        for f in members {
            old.append((groupOf(f), hasPurgeWork(f)))
            propagate(f, removing: contribution(f), adding: .zero)
        }
        change(&self)
        refreshInherited(d)
        for (f, old) in zip(members, old) {
            propagate(f, removing: .zero, adding: contribution(f))
            syncIndex(f, oldGroup: old.group, oldWork: old.work)
        }
    }

    // MARK: The purge order

    /// Puts the file, or its group, in the recency index or takes it out,
    /// as its purge state now says; `oldGroup` and `oldWork` are its group
    /// and whether it had purge work before the change.
    mutating func syncIndex(_ f: UInt32, oldGroup: UInt32, oldWork: Bool) {
        let group = groupOf(f)
        let work = hasPurgeWork(f)
        if oldGroup != noSlot && oldWork { directories[Int(oldGroup)].membersWithWork -= 1 }
        if group != noSlot && work { directories[Int(group)].membersWithWork += 1 }
        let item = RecencyIndex.Item.file(f)
        let wanted = group == noSlot && work
        if wanted != index.contains(item) {
            if wanted { index.insert(item, stamp: files[Int(f)].lastUsed) } else { index.remove(item) }
        }
        if group != noSlot {
            raiseGroup(group, to: files[Int(f)].lastUsed)
            syncGroup(group)
        }
        if oldGroup != noSlot && oldGroup != group { syncGroup(oldGroup) }
    }

    /// A group is in the index while it is a group root with a member to purge.
    mutating func syncGroup(_ g: UInt32) {
        let directory = directories[Int(g)]
        let item = RecencyIndex.Item.group(g)
        let wanted = directory.flags.contains(.live) && directory.group == g && directory.membersWithWork > 0
        if wanted != index.contains(item) {
            if wanted { index.insert(item, stamp: directory.lastUsed) } else { index.remove(item) }
        }
    }

    /// A group is as recent as its most recently used file.
    mutating func raiseGroup(_ g: UInt32, to stamp: UInt64) {
        guard stamp > directories[Int(g)].lastUsed else { return }
        directories[Int(g)].lastUsed = stamp
        let item = RecencyIndex.Item.group(g)
        if index.contains(item) { index.touch(item, stamp: stamp) }
    }

    // MARK: Subtrees

    /// Whether directory `x` is `d` or lies below it. O(depth).
    func isWithin(_ x: UInt32, _ d: UInt32) -> Bool {
        var current = x
        while current != noSlot {
            if current == d { return true }
            current = directories[Int(current)].parent
        }
        return false
    }

    /// The directories of the subtree at `d`, `d` first.
    func subtreeDirectories(_ d: UInt32) -> [UInt32] {
        var result: [UInt32] = []
        var stack = [d]
        while let x = stack.popLast() {
            result.append(x)
            var child = directories[Int(x)].firstChild
            while child != noSlot {
                stack.append(child)
                child = directories[Int(child)].nextSibling
            }
        }
        return result
    }

    /// Every file with at least one name in the subtree at `d`, once each.
    func filesTouching(_ d: UInt32) -> [UInt32] {
        var result: [UInt32] = []
        for x in subtreeDirectories(d) {
            var f = directories[Int(x)].firstFile
            while f != noSlot {
                result.append(f)
                f = files[Int(f)].next
            }
        }
        var linkedIn: [UInt32] = []
        for (f, extras) in extraLinks where !isWithin(files[Int(f)].parent, d) && extras.contains(where: { isWithin($0, d) }) {
            linkedIn.append(f)
        }
        return result + linkedIn.sorted()
    }

    /// Whether a hard-linked file has names both inside and outside the
    /// subtree at `d`: then moving `d` changes which directories count it.
    func hasLinksAcross(_ d: UInt32) -> Bool {
        for (f, extras) in extraLinks {
            let inside = ([files[Int(f)].parent] + extras).map { isWithin($0, d) }
            if inside.contains(true) && inside.contains(false) { return true }
        }
        return false
    }

    /// The inherited settings directory `x` gets below `parent`.
    func inherited(_ x: UInt32, below parent: UInt32) -> (flags: DirectoryRecord.Flags, group: UInt32) {
        let above: DirectoryRecord.Flags = parent == noSlot ? [] : directories[Int(parent)].flags
        let aboveGroup = parent == noSlot ? noSlot : directories[Int(parent)].group
        var flags = directories[Int(x)].flags.subtracting(.inherited)
        if flags.contains(.zoneRoot) || above.contains(.inZone) { flags.insert(.inZone) }
        if flags.contains(.pinned) || above.contains(.pinnedBelow) { flags.insert(.pinnedBelow) }
        if flags.contains(.tombstone) || above.contains(.tombstoneBelow) { flags.insert(.tombstoneBelow) }
        let group = aboveGroup != noSlot ? aboveGroup
            : (flags.contains(.group) && flags.contains(.inZone) ? x : noSlot)
        return (flags, group)
    }

    /// Recomputes the inherited settings of the subtree at `d`, top down.
    mutating func refreshInherited(_ d: UInt32) {
        for x in subtreeDirectories(d) {
            let (flags, group) = inherited(x, below: directories[Int(x)].parent)
            directories[Int(x)].flags = flags
            directories[Int(x)].group = group
        }
    }
}
