/// A from-scratch check of everything the ledger keeps incrementally.
extension Ledger {
    /// Every way the ledger disagrees with a recomputation from its records:
    /// empty when it is consistent. Recomputes each directory's totals by
    /// walking every file's names up to the root (so O(files × depth)), the
    /// inherited settings from the directories' own flags, and the purge
    /// order's membership and stamps. For tests and debugging.
    public func invariantViolations() -> [String] {
        var problems: [String] = []
        func fail(_ message: String) { problems.append(message) }

        // Identity table against the records.
        var liveFiles = 0, liveDirectories = 0
        for (f, record) in files.enumerated() where record.flags.contains(.live) {
            liveFiles += 1
            if ref(of: record.id) != .file(UInt32(f)) { fail("file \(record.id): identity table points elsewhere") }
        }
        for (x, record) in directories.enumerated() where record.flags.contains(.live) {
            liveDirectories += 1
            if ref(of: record.id) != .directory(UInt32(x)) { fail("directory \(record.id): identity table points elsewhere") }
        }
        if identities.count != liveFiles + liveDirectories { fail("identity table has \(identities.count) entries for \(liveFiles + liveDirectories) records") }

        // Tree shape: child lists, file lists, name counts.
        var names = [UInt32](repeating: 0, count: directories.count)
        var listed = [Bool](repeating: false, count: files.count)
        var listedCount = 0
        var linked = 0, unlinkedAllocated: UInt64 = 0
        for (f, record) in files.enumerated() where record.flags.contains(.live) {
            guard record.isLinked else {
                if !record.flags.contains(.open) { fail("file \(record.id): no name and not open") }
                unlinkedAllocated += record.allocated
                continue
            }
            linked += 1
            for d in [record.parent] + (extraLinks[UInt32(f)] ?? []) {
                if !directories[Int(d)].flags.contains(.live) { fail("file \(record.id): named in a removed directory") }
                names[Int(d)] += 1
            }
            if record.flags.contains(.extraLinks) != (extraLinks[UInt32(f)] != nil) { fail("file \(record.id): extra-link flag wrong") }
            if record.flags.contains(.open) != (openCounts[UInt32(f)] != nil) { fail("file \(record.id): open flag wrong") }
        }
        if linked != linkedFileCount { fail("linked file count \(linkedFileCount), counted \(linked)") }
        if unlinkedAllocated != unlinkedOpenAllocated { fail("unlinked open bytes \(unlinkedOpenAllocated), counted \(unlinkedAllocated)") }
        for (x, record) in directories.enumerated() where record.flags.contains(.live) {
            if record.fileLinks != names[x] { fail("directory \(record.id): \(record.fileLinks) names recorded, \(names[x]) found") }
            var f = record.firstFile, previous = noSlot
            while f != noSlot {
                if files[Int(f)].parent != UInt32(x) { fail("directory \(record.id): lists a file whose first name is elsewhere") }
                if files[Int(f)].previous != previous { fail("directory \(record.id): broken file list") }
                if listed[Int(f)] { fail("file \(files[Int(f)].id) listed twice") }
                listed[Int(f)] = true
                listedCount += 1
                previous = f
                f = files[Int(f)].next
            }
            var child = record.firstChild
            while child != noSlot {
                if directories[Int(child)].parent != UInt32(x) { fail("directory \(record.id): lists a child of another") }
                child = directories[Int(child)].nextSibling
            }
            if record.parent == noSlot && UInt32(x) != rootSlot { fail("directory \(record.id): detached") }
        }
        if listedCount != linked { fail("\(linked) named files, \(listedCount) listed") }

        // Inherited settings, from the directories' own flags up the chain.
        for (x, record) in directories.enumerated() where record.flags.contains(.live) {
            var chain: [UInt32] = []
            var d = UInt32(x)
            while d != noSlot { chain.append(d); d = directories[Int(d)].parent }
            let own = chain.map { directories[Int($0)].flags }
            let inZone = own.contains { $0.contains(.zoneRoot) }
            if record.flags.contains(.inZone) != inZone { fail("directory \(record.id): zone flag wrong") }
            if record.flags.contains(.pinnedBelow) != own.contains(where: { $0.contains(.pinned) }) { fail("directory \(record.id): pin flag wrong") }
            if record.flags.contains(.tombstoneBelow) != own.contains(where: { $0.contains(.tombstone) }) { fail("directory \(record.id): tombstone flag wrong") }
            // The outermost group root above, counting only directories in a zone.
            var group = noSlot
            for (i, slot) in chain.enumerated() where own[i].contains(.group) {
                if own[i...].contains(where: { $0.contains(.zoneRoot) }) { group = slot }
            }
            if record.group != group { fail("directory \(record.id): group wrong") }
        }

        // Totals: each file once per directory above any of its names.
        var expected = [Totals](repeating: .zero, count: directories.count)
        var seen = [Int](repeating: -1, count: directories.count)
        for f in files.indices where files[f].flags.contains(.live) && files[f].isLinked {
            let contribution = contribution(UInt32(f))
            for start in [files[f].parent] + (extraLinks[UInt32(f)] ?? []) {
                var d = start
                while d != noSlot && seen[Int(d)] != f {
                    seen[Int(d)] = f
                    expected[Int(d)] = expected[Int(d)] + contribution
                    d = directories[Int(d)].parent
                }
            }
        }
        for (x, record) in directories.enumerated() where record.flags.contains(.live) && record.totals != expected[x] {
            fail("directory \(record.id): totals \(record.totals), recomputed \(expected[x])")
        }

        // The purge order: exactly the wanted items, at their stamps.
        if !index.isConsistent() { fail("recency index: heap broken") }
        var wanted = 0
        var members = [UInt32](repeating: 0, count: directories.count)
        for f in files.indices where files[f].flags.contains(.live) {
            let slot = UInt32(f)
            let group = groupOf(slot)
            if group != noSlot && hasPurgeWork(slot) { members[Int(group)] += 1 }
            if group != noSlot && files[f].lastUsed > directories[Int(group)].lastUsed {
                fail("file \(files[f].id): used after its group's age")
            }
            let item = RecencyIndex.Item.file(slot)
            if group == noSlot && hasPurgeWork(slot) {
                wanted += 1
                if index.stamp(of: item) != files[f].lastUsed { fail("file \(files[f].id): missing or stale in the purge order") }
            } else if index.contains(item) {
                fail("file \(files[f].id): in the purge order but should not be")
            }
            if files[f].lastUsed > clock.last { fail("file \(files[f].id): stamp ahead of the clock") }
        }
        for (x, record) in directories.enumerated() where record.flags.contains(.live) {
            let item = RecencyIndex.Item.group(UInt32(x))
            if record.membersWithWork != members[x] { fail("group \(record.id): \(record.membersWithWork) members to purge, counted \(members[x])") }
            if record.group == UInt32(x) && members[x] > 0 {
                wanted += 1
                if index.stamp(of: item) != record.lastUsed { fail("group \(record.id): missing or stale in the purge order") }
            } else if index.contains(item) {
                fail("directory \(record.id): in the purge order but should not be")
            }
        }
        if wanted != index.count { fail("purge order holds \(index.count) items, \(wanted) wanted") }
        return problems
    }
}
