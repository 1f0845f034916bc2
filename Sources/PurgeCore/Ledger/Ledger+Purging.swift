/// What the planner and the adapter's purge loop need from the ledger.
extension Ledger {
    /// The files purged with group `g`, oldest first: those whose first name
    /// lies in its subtree and which still have purge work.
    func groupMembers(_ g: UInt32) -> [UInt32] {
        var members: [UInt32] = []
        for x in subtreeDirectories(g) {
            var f = directories[Int(x)].firstFile
            while f != noSlot {
                let state = purgeState(f)
                if state.group == g && state.work { members.append(f) }
                f = files[Int(f)].next
            }
        }
        return members.sorted { (files[Int($0)].lastUsed, $0) < (files[Int($1)].lastUsed, $1) }
    }

    /// Whether the victim may still be purged as planned: the file is still
    /// a candidate with the same names. The adapter asks under its lock just
    /// before acting, since the plan may be a little old.
    public func canPurge(_ victim: PurgeVictim) -> Bool {
        guard let ref = ref(of: victim.file), !ref.isDirectory else { return false }
        let f = ref.slot
        let state = purgeState(f)
        guard state.work else { return false }
        let action: PurgeAction = state.tombstoned ? .truncate : .delete
        return action == victim.action && linkDirectories(f).sorted() == victim.directories.sorted()
    }

    /// Records a victim the adapter purged completely: every name removed,
    /// or the file truncated to zero.
    public mutating func purged(_ victim: PurgeVictim) throws(PurgeCoreError) {
        switch victim.action {
        case .truncate:
            try update(victim.file, size: 0, allocated: 0, cloneSavings: 0)
        case .delete:
            for directory in victim.directories {
                try removeLink(victim.file, parent: directory)
            }
        }
    }
}
