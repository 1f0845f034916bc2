@testable import PurgeCore

/// A deliberately naive model of the ledger's rules: dictionaries, whole
/// ancestor chains recomputed on every question, nothing incremental. The
/// random tests drive it and the ledger side by side and compare.
struct ReferenceModel {
    struct Directory {
        var parent: EntryID?
        var zone = false, pinned = false, group = false, tombstone = false
        /// Age while a group root: raised by every file that is a member after a change.
        var groupStamp: UInt64 = 0
    }

    struct File {
        var links: [EntryID]
        var size: UInt64
        var allocated: UInt64
        var pinned = false
        var opens = 0
        var lastUsed: UInt64
    }

    var directories: [EntryID: Directory] = [:]
    var files: [EntryID: File] = [:]

    /// `d` and every directory above it.
    func chain(_ d: EntryID) -> [EntryID] {
        var result: [EntryID] = []
        var current: EntryID? = d
        while let c = current {
            result.append(c)
            current = directories[c]!.parent
        }
        return result
    }

    func directoryInZone(_ d: EntryID) -> Bool { chain(d).contains { directories[$0]!.zone } }

    func inZone(_ f: EntryID) -> Bool {
        let file = files[f]!
        return !file.links.isEmpty && file.links.allSatisfy(directoryInZone)
    }

    func pinned(_ f: EntryID) -> Bool {
        let file = files[f]!
        return file.pinned || file.links.contains { chain($0).contains { directories[$0]!.pinned } }
    }

    func tombstoned(_ f: EntryID) -> Bool {
        files[f]!.links.contains { chain($0).contains { directories[$0]!.tombstone } }
    }

    func candidate(_ f: EntryID) -> Bool { inZone(f) && !pinned(f) && files[f]!.opens == 0 }

    func work(_ f: EntryID) -> Bool {
        let file = files[f]!
        return candidate(f) && !(tombstoned(f) && file.size == 0 && file.allocated == 0)
    }

    /// The outermost group directory in a zone above `d`.
    func groupRoot(ofDirectory d: EntryID) -> EntryID? {
        chain(d).last { directories[$0]!.group && directoryInZone($0) }
    }

    func group(_ f: EntryID) -> EntryID? {
        guard inZone(f) else { return nil }
        return groupRoot(ofDirectory: files[f]!.links[0])
    }

    func contribution(_ f: EntryID) -> Totals {
        let file = files[f]!
        let work = work(f)
        return Totals(size: file.size, files: 1, allocated: file.allocated,
                      purgeable: work ? file.allocated : 0, purgeableFiles: work ? 1 : 0)
    }

    func totals() -> [EntryID: Totals] {
        var result = directories.mapValues { _ in Totals.zero }
        for (f, file) in files where !file.links.isEmpty {
            let above = Set(file.links.flatMap(chain))
            for d in above { result[d] = result[d]! + contribution(f) }
        }
        return result
    }

    /// Raises each group root's age to its members' stamps, as the ledger
    /// does whenever a member changes.
    mutating func raiseGroups() {
        for (f, file) in files {
            if let g = group(f), file.lastUsed > directories[g]!.groupStamp { directories[g]!.groupStamp = file.lastUsed }
        }
    }

    /// The stamp a planned victim is ordered by: its group's age, or its own.
    func orderStamp(_ f: EntryID) -> UInt64 {
        if let g = group(f) { return directories[g]!.groupStamp }
        return files[f]!.lastUsed
    }

    func isWithin(_ x: EntryID, _ d: EntryID) -> Bool { chain(x).contains(d) }
}
