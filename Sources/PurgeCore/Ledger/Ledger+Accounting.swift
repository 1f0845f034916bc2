/// How one file counts: its derived purge state, its contribution to the
/// totals above it, and the propagation of changes up the tree.
extension Ledger {
    // MARK: Derived state of a file

    /// Everything purging needs to know about a file, from one pass over its
    /// names. Computed before and after each change, and compared.
    struct PurgeState: Equatable {
        /// Every name inside a purgeable zone. A file with one name outside
        /// a zone is never purged: deleting only its zone names would free
        /// nothing, and purging must never reach outside a zone.
        var inZone = false
        /// Pinned on the file, or on a directory above any of its names.
        var pinned = false
        /// Below a tombstone directory through any name: purging truncates
        /// it, so that name stays.
        var tombstoned = false
        /// In a zone, not pinned, not open.
        var candidate = false
        /// A candidate a purge would still change: a tombstoned file already
        /// truncated to nothing stays out of the purge order, or it would be
        /// its oldest item forever.
        var work = false
        /// The group root of its first name's directory, when in a zone.
        var group = noSlot
        /// What the file adds to each directory above it.
        var contribution = Totals.zero
    }

    func purgeState(_ f: UInt32) -> PurgeState {
        let record = files[Int(f)]
        var state = PurgeState()
        state.pinned = record.flags.has(.pinned)
        guard record.isLinked else { return state }
        var inZone = true, pinned = state.pinned, tombstoned = false
        func visit(_ flags: DirectoryRecord.Flags) {
            inZone = inZone && flags.has(.inZone)
            pinned = pinned || flags.has(.pinnedBelow)
            tombstoned = tombstoned || flags.has(.tombstoneBelow)
        }
        visit(directories[Int(record.parent)].flags)
        if record.flags.has(.extraLinks) {
            for d in extraLinks[f]! { visit(directories[Int(d)].flags) }
        }
        state.inZone = inZone
        state.pinned = pinned
        state.tombstoned = tombstoned
        state.candidate = inZone && !pinned && !record.flags.has(.open)
        state.work = state.candidate && (record.size > 0 || record.allocated > 0 || !tombstoned)
        state.group = inZone ? directories[Int(record.parent)].group : noSlot
        state.contribution = Totals(
            size: record.size,
            files: 1,
            allocated: record.allocated,
            purgeable: state.work ? record.allocated : 0,
            purgeableFiles: state.work ? 1 : 0,
            cloneSavings: record.flags.has(.cloned) ? cloneSavings[f]! : 0)
        return state
    }

    func hasPurgeWork(_ f: UInt32) -> Bool { purgeState(f).work }
    func groupOf(_ f: UInt32) -> UInt32 { purgeState(f).group }
    func contribution(_ f: UInt32) -> Totals { purgeState(f).contribution }

    // MARK: Propagation

    /// Replaces `old` by `new` in every directory above the file's names,
    /// each directory once even when several names lie below it.
    mutating func propagate(_ f: UInt32, removing old: Totals, adding new: Totals) {
        guard old != new else { return }
        let record = files[Int(f)]
        guard record.isLinked else { return }
        if !record.flags.has(.extraLinks) {
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
        let old = purgeState(f)
        let wasLinked = files[Int(f)].isLinked
        let oldAllocated = files[Int(f)].allocated
        if relinks { propagate(f, removing: old.contribution, adding: .zero) }
        change(&self)
        let new = purgeState(f)
        propagate(f, removing: relinks ? .zero : old.contribution, adding: new.contribution)
        let isLinked = files[Int(f)].isLinked
        if !wasLinked { unlinkedOpenAllocated -= oldAllocated }
        if !isLinked { unlinkedOpenAllocated += files[Int(f)].allocated }
        if wasLinked != isLinked { linkedFileCount += isLinked ? 1 : -1 }
        syncIndex(f, old: old, new: new)
    }

    /// Runs a change that can alter the zone, pin, tombstone or group of a
    /// whole subtree (a setting on a directory, a move): every file with a
    /// name in the subtree is taken out of the totals, the change made and
    /// the settings below recomputed, then every file put back. O(files in
    /// the subtree × depth); such changes are rare.
    mutating func changeSubtree(_ d: UInt32, _ change: (inout Ledger) -> Void) {
        let members = filesTouching(d)
        var states: [PurgeState] = []
        states.reserveCapacity(members.count)
        for f in members {
            let old = purgeState(f)
            states.append(old)
            propagate(f, removing: old.contribution, adding: .zero)
        }
        change(&self)
        refreshInherited(d)
        for (f, old) in zip(members, states) {
            let new = purgeState(f)
            propagate(f, removing: .zero, adding: new.contribution)
            syncIndex(f, old: old, new: new)
        }
    }

    // MARK: The purge order

    /// Puts the file, or its group, in the recency index or takes it out,
    /// as its purge state changed from `old` to `new`.
    mutating func syncIndex(_ f: UInt32, old: PurgeState, new: PurgeState) {
        if old.group != noSlot && old.work { directories[Int(old.group)].membersWithWork -= 1 }
        if new.group != noSlot && new.work { directories[Int(new.group)].membersWithWork += 1 }
        let wasFileItem = old.group == noSlot && old.work
        let isFileItem = new.group == noSlot && new.work
        if wasFileItem != isFileItem {
            let item = RecencyIndex.Item.file(f)
            if isFileItem { index.insert(item, stamp: files[Int(f)].lastUsed) } else { index.remove(item) }
        }
        if new.group != noSlot {
            raiseGroup(new.group, to: files[Int(f)].lastUsed)
            syncGroup(new.group)
        }
        if old.group != noSlot && old.group != new.group { syncGroup(old.group) }
    }

    /// A group is in the index while it is a group root with a member to purge.
    mutating func syncGroup(_ g: UInt32) {
        let directory = directories[Int(g)]
        let item = RecencyIndex.Item.group(g)
        let wanted = directory.flags.has(.live) && directory.group == g && directory.membersWithWork > 0
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
