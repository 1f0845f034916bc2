/// Chooses what to purge: least recently used items first, stopping as soon
/// as enough is planned.
///
/// It reads the ledger's purge order without changing it (a best-first walk
/// of the heap), so planning k items costs O(k log k) however many files the
/// container holds, and only candidates are ever in that order: never a file
/// outside a zone, pinned or open. Each victim is checked again anyway,
/// because a plan that reaches outside a zone must be impossible, not just
/// unlikely.
public enum PurgePlanner {
    public static func plan(_ goal: PurgeGoal, in ledger: Ledger, excluding excluded: Set<EntryID> = []) -> PurgePlan {
        var plan = PurgePlan(goal: goal)
        if case .bytes(0) = goal { return plan }
        var items = ledger.index.ordered().makeIterator()
        while let (item, _) = items.next() {
            plan.examinedItems += 1
            if item.isGroup {
                for f in ledger.groupMembers(item.slot) where !excluded.contains(ledger.files[Int(f)].id) {
                    add(f, to: &plan, from: ledger)
                }
            } else if !excluded.contains(ledger.files[Int(item.slot)].id) {
                add(item.slot, to: &plan, from: ledger)
            }
            if case .bytes(let need) = goal, plan.plannedBytes >= need { break }
        }
        return plan
    }

    private static func add(_ f: UInt32, to plan: inout PurgePlan, from ledger: Ledger) {
        let state = ledger.purgeState(f)
        guard state.work else { return }
        let record = ledger.files[Int(f)]
        let group = state.group
        plan.victims.append(PurgeVictim(
            file: record.id,
            action: state.tombstoned ? .truncate : .delete,
            directories: ledger.linkDirectories(f),
            bytes: record.allocated,
            size: record.size,
            lastUsed: record.lastUsed,
            group: group == noSlot ? nil : ledger.directories[Int(group)].id))
        plan.plannedBytes = plan.plannedBytes.addingClamped(record.allocated)
    }
}
