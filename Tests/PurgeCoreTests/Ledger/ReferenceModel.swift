@testable import PurgeCore

/// A deliberately naive model of the ledger's rules: dictionaries and whole
/// ancestor chains, nothing incremental. The random tests drive it and the
/// ledger side by side and compare. Questions go through `Derived`, a
/// snapshot of the per-directory facts computed once per comparison.
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

    func isWithin(_ x: EntryID, _ d: EntryID) -> Bool { chain(x).contains(d) }

    func derived() -> Derived { Derived(self) }

    /// Raises each group root's age to its members' stamps, as the ledger
    /// does whenever a member changes.
    mutating func raiseGroups() {
        let facts = derived()
        for (f, file) in files {
            if let g = facts.group(f), file.lastUsed > directories[g]!.groupStamp { directories[g]!.groupStamp = file.lastUsed }
        }
    }

    struct Derived {
        let model: ReferenceModel
        var chains: [EntryID: [EntryID]] = [:]
        var inZone: Set<EntryID> = [], pinned: Set<EntryID> = [], tombstone: Set<EntryID> = []
        var groupRoot: [EntryID: EntryID] = [:]

        init(_ model: ReferenceModel) {
            self.model = model
            for (d, _) in model.directories {
                let chain = model.chain(d)
                chains[d] = chain
                let own = chain.map { model.directories[$0]! }
                if own.contains(where: \.zone) { inZone.insert(d) }
                if own.contains(where: \.pinned) { pinned.insert(d) }
                if own.contains(where: \.tombstone) { tombstone.insert(d) }
            }
            for (d, chain) in chains {
                // The outermost group directory in a zone above `d`.
                if let root = chain.last(where: { model.directories[$0]!.group && inZone.contains($0) }) {
                    groupRoot[d] = root
                }
            }
        }

        func inZone(_ f: EntryID) -> Bool {
            let links = model.files[f]!.links
            return !links.isEmpty && links.allSatisfy(inZone.contains)
        }

        func pinned(_ f: EntryID) -> Bool { model.files[f]!.pinned || model.files[f]!.links.contains(where: pinned.contains) }
        func tombstoned(_ f: EntryID) -> Bool { model.files[f]!.links.contains(where: tombstone.contains) }
        func candidate(_ f: EntryID) -> Bool { inZone(f) && !pinned(f) && model.files[f]!.opens == 0 }

        func work(_ f: EntryID) -> Bool {
            let file = model.files[f]!
            return candidate(f) && !(tombstoned(f) && file.size == 0 && file.allocated == 0)
        }

        func group(_ f: EntryID) -> EntryID? { inZone(f) ? groupRoot[model.files[f]!.links[0]] : nil }

        func contribution(_ f: EntryID) -> Totals {
            let file = model.files[f]!
            let work = work(f)
            return Totals(size: file.size, files: 1, allocated: file.allocated,
                          purgeable: work ? file.allocated : 0, purgeableFiles: work ? 1 : 0)
        }

        func totals() -> [EntryID: Totals] {
            var result = model.directories.mapValues { _ in Totals.zero }
            for (f, file) in model.files where !file.links.isEmpty {
                let contribution = contribution(f)
                for d in Set(file.links.flatMap { chains[$0]! }) { result[d] = result[d]! + contribution }
            }
            return result
        }

        /// The stamp a planned victim is ordered by: its group's age, or its own.
        func orderStamp(_ f: EntryID) -> UInt64 {
            if let g = group(f) { return model.directories[g]!.groupStamp }
            return model.files[f]!.lastUsed
        }
    }
}
