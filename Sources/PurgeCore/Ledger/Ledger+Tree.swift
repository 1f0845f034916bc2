/// Changes to the tree, as the passthrough makes them. Each is O(depth),
/// except a directory move that changes the zone, pin, tombstone or group
/// of its subtree (O(subtree)).
extension Ledger {
    /// Records a directory; the root has no parent, and there is one root.
    public mutating func addDirectory(_ id: EntryID, parent: EntryID?) throws(PurgeCoreError) {
        var p = noSlot
        if let parent {
            p = try directorySlot(parent)
        } else if rootSlot != noSlot {
            throw .rootExists(directories[Int(rootSlot)].id)
        }
        guard ref(of: id) == nil else { throw .entryExists(id) }
        let x = newDirectorySlot(id, parent: p)
        if p == noSlot { rootSlot = x } else { listDirectory(x, in: p) }
        let (flags, group) = inherited(x, below: p)
        directories[Int(x)].flags = flags
        directories[Int(x)].group = group
    }

    /// Records a regular file with its first name in `parent`. `lastUsed`
    /// is a stamp from an earlier mount or from the file's times; without
    /// it the file counts as used now (it was just created).
    public mutating func addFile(_ id: EntryID, parent: EntryID, size: UInt64, allocated: UInt64,
                                 lastUsed: UInt64? = nil) throws(PurgeCoreError) {
        let p = try directorySlot(parent)
        guard ref(of: id) == nil else { throw .entryExists(id) }
        let stamp: UInt64
        if let lastUsed {
            clock.observe(lastUsed)
            stamp = lastUsed
        } else {
            stamp = clock.next()
        }
        let f = newFileSlot(id, lastUsed: stamp)
        if lastUsed == nil { noteRecencyChange(f) }  // made now, through the mount
        changeFile(f, relinks: true) { ledger in
            ledger.files[Int(f)].size = size
            ledger.files[Int(f)].allocated = allocated
            ledger.attachLink(f, to: p)
        }
    }

    /// Records another name of a known file (`link(2)`), or a new name of an
    /// unlinked open file (`linkat` from its descriptor).
    public mutating func addLink(_ id: EntryID, parent: EntryID) throws(PurgeCoreError) {
        let f = try fileSlot(id)
        let p = try directorySlot(parent)
        changeFile(f, relinks: true) { $0.attachLink(f, to: p) }
    }

    /// Forgets one name of a file (`unlink(2)`, or a rename that replaced
    /// it). With its last name gone the file leaves the totals; its record
    /// goes too, unless it is open, in which case it goes at the last close.
    public mutating func removeLink(_ id: EntryID, parent: EntryID) throws(PurgeCoreError) {
        let f = try fileSlot(id)
        let p = try directorySlot(parent)
        guard hasLink(f, in: p) else { throw .notLinked(id, directory: parent) }
        changeFile(f, relinks: true) { $0.detachLink(f, from: p) }
        if !files[Int(f)].isLinked && !files[Int(f)].flags.contains(.open) { freeFile(f) }
    }

    /// Moves one name of a file, or a whole directory, from `from` to `to`
    /// (`rename(2)`; a rename within one directory changes nothing here).
    /// A rename that replaces an existing file must first `removeLink` it.
    public mutating func move(_ id: EntryID, from: EntryID, to: EntryID) throws(PurgeCoreError) {
        guard let ref = ref(of: id) else { throw .unknownEntry(id) }
        let a = try directorySlot(from)
        let b = try directorySlot(to)
        if !ref.isDirectory {
            let f = ref.slot
            guard hasLink(f, in: a) else { throw .notLinked(id, directory: from) }
            guard a != b else { return }
            changeFile(f, relinks: true) { $0.relink(f, from: a, to: b) }
            return
        }
        let x = ref.slot
        guard directories[Int(x)].parent == a else { throw .notLinked(id, directory: from) }
        guard a != b else { return }
        guard !isWithin(b, x) else { throw .wouldCreateCycle(id) }
        let settings = inherited(x, below: b)
        if settings.flags == directories[Int(x)].flags && settings.group == directories[Int(x)].group
            && !hasLinksAcross(x) {
            // Nothing below changes its purge state: carry the totals over.
            let totals = directories[Int(x)].totals
            addToAncestors(of: a, removing: totals, adding: .zero)
            unlistDirectory(x)
            listDirectory(x, in: b)
            addToAncestors(of: b, removing: .zero, adding: totals)
            return
        }
        changeSubtree(x) { ledger in
            ledger.unlistDirectory(x)
            ledger.listDirectory(x, in: b)
        }
    }

    /// Records new figures of a file after a write, truncate or allocation.
    /// `cloneSavings` is the hook for clones: the bytes the file references
    /// but is not charged for in `allocated` (nil leaves it as it was).
    public mutating func update(_ id: EntryID, size: UInt64, allocated: UInt64,
                                cloneSavings savings: UInt64? = nil) throws(PurgeCoreError) {
        let f = try fileSlot(id)
        changeFile(f) { ledger in
            ledger.files[Int(f)].size = size
            ledger.files[Int(f)].allocated = allocated
            if let savings {
                if savings == 0 {
                    ledger.cloneSavings[f] = nil
                    ledger.files[Int(f)].flags.remove(.cloned)
                } else {
                    ledger.cloneSavings[f] = savings
                    ledger.files[Int(f)].flags.insert(.cloned)
                }
            }
        }
    }

    /// Forgets an empty directory (`rmdir(2)`).
    public mutating func removeDirectory(_ id: EntryID) throws(PurgeCoreError) {
        let x = try directorySlot(id)
        guard directories[Int(x)].firstChild == noSlot && directories[Int(x)].fileLinks == 0 else {
            throw .directoryNotEmpty(id)
        }
        precondition(directories[Int(x)].totals == .zero, "purgefs: empty directory \(id) has totals left")
        if directories[Int(x)].parent == noSlot { rootSlot = noSlot } else { unlistDirectory(x) }
        let item = RecencyIndex.Item.group(x)
        if index.contains(item) { index.remove(item) }
        identities.remove(id, in: records)
        directories[Int(x)].flags = []
        freeDirectories.append(x)
    }

    // MARK: Mechanics

    func hasLink(_ f: UInt32, in d: UInt32) -> Bool {
        let record = files[Int(f)]
        if record.parent == d { return true }
        return record.flags.contains(.extraLinks) && extraLinks[f]!.contains(d)
    }

    /// Adds `new` and removes `old` in `d` and every directory above it.
    mutating func addToAncestors(of d: UInt32, removing old: Totals, adding new: Totals) {
        var current = d
        while current != noSlot {
            directories[Int(current)].totals.replace(old, with: new)
            current = directories[Int(current)].parent
        }
    }

    mutating func newFileSlot(_ id: EntryID, lastUsed: UInt64) -> UInt32 {
        let record = FileRecord(id: id, size: 0, allocated: 0, lastUsed: lastUsed,
                                parent: noSlot, next: noSlot, previous: noSlot, flags: .live)
        let f: UInt32
        if let free = freeFiles.popLast() {
            f = free
            files[Int(f)] = record
        } else {
            f = UInt32(files.count)
            precondition(f < 1 << 31, "purgefs: the ledger is full")
            files.append(record)
        }
        identities.insert(.file(f), in: records)
        return f
    }

    mutating func newDirectorySlot(_ id: EntryID, parent: UInt32) -> UInt32 {
        let record = DirectoryRecord(id: id, parent: parent)
        let x: UInt32
        if let free = freeDirectories.popLast() {
            x = free
            directories[Int(x)] = record
        } else {
            x = UInt32(directories.count)
            precondition(x < 1 << 31, "purgefs: the ledger is full")
            directories.append(record)
        }
        identities.insert(.directory(x), in: records)
        return x
    }

    /// Forgets a file with no name left and no open handle.
    mutating func freeFile(_ f: UInt32) {
        let record = files[Int(f)]
        precondition(!record.isLinked && !record.flags.contains(.open), "purgefs: freeing a file still in use")
        precondition(!index.contains(.file(f)), "purgefs: freeing a file still in the purge order")
        unlinkedOpenAllocated -= record.allocated
        cloneSavings[f] = nil
        identities.remove(record.id, in: records)
        files[Int(f)].flags = []
        freeFiles.append(f)
    }

    /// Gives the file a name in `d`: its first, or an extra one.
    mutating func attachLink(_ f: UInt32, to d: UInt32) {
        if files[Int(f)].isLinked {
            extraLinks[f, default: []].append(d)
            files[Int(f)].flags.insert(.extraLinks)
        } else {
            files[Int(f)].parent = d
            listFile(f, in: d)
        }
        directories[Int(d)].fileLinks += 1
    }

    /// Takes one name in `d` away; an extra name takes over as the first.
    mutating func detachLink(_ f: UInt32, from d: UInt32) {
        if files[Int(f)].parent == d {
            unlistFile(f)
            files[Int(f)].parent = noSlot
            if files[Int(f)].flags.contains(.extraLinks) {
                let promoted = removeExtraLink(f, at: 0)
                files[Int(f)].parent = promoted
                listFile(f, in: promoted)
            }
        } else {
            _ = removeExtraLink(f, at: extraLinks[f]!.firstIndex(of: d)!)
        }
        directories[Int(d)].fileLinks -= 1
    }

    /// Moves the name in `a` to `b`, keeping whether it is the first name.
    mutating func relink(_ f: UInt32, from a: UInt32, to b: UInt32) {
        if files[Int(f)].parent == a {
            unlistFile(f)
            files[Int(f)].parent = b
            listFile(f, in: b)
        } else {
            let position = extraLinks[f]!.firstIndex(of: a)!
            extraLinks[f]![position] = b
        }
        directories[Int(a)].fileLinks -= 1
        directories[Int(b)].fileLinks += 1
    }

    private mutating func removeExtraLink(_ f: UInt32, at position: Int) -> UInt32 {
        let d = extraLinks[f]!.remove(at: position)
        if extraLinks[f]!.isEmpty {
            extraLinks[f] = nil
            files[Int(f)].flags.remove(.extraLinks)
        }
        return d
    }

    private mutating func listFile(_ f: UInt32, in d: UInt32) {
        let head = directories[Int(d)].firstFile
        files[Int(f)].next = head
        files[Int(f)].previous = noSlot
        if head != noSlot { files[Int(head)].previous = f }
        directories[Int(d)].firstFile = f
    }

    private mutating func unlistFile(_ f: UInt32) {
        let record = files[Int(f)]
        if record.previous != noSlot {
            files[Int(record.previous)].next = record.next
        } else {
            directories[Int(record.parent)].firstFile = record.next
        }
        if record.next != noSlot { files[Int(record.next)].previous = record.previous }
        files[Int(f)].next = noSlot
        files[Int(f)].previous = noSlot
    }

    mutating func listDirectory(_ x: UInt32, in p: UInt32) {
        let head = directories[Int(p)].firstChild
        directories[Int(x)].parent = p
        directories[Int(x)].nextSibling = head
        directories[Int(x)].previousSibling = noSlot
        if head != noSlot { directories[Int(head)].previousSibling = x }
        directories[Int(p)].firstChild = x
    }

    mutating func unlistDirectory(_ x: UInt32) {
        let record = directories[Int(x)]
        if record.previousSibling != noSlot {
            directories[Int(record.previousSibling)].nextSibling = record.nextSibling
        } else {
            directories[Int(record.parent)].firstChild = record.nextSibling
        }
        if record.nextSibling != noSlot { directories[Int(record.nextSibling)].previousSibling = record.previousSibling }
        directories[Int(x)].parent = noSlot
        directories[Int(x)].nextSibling = noSlot
        directories[Int(x)].previousSibling = noSlot
    }
}
