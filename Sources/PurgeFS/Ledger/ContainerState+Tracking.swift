import Glibc
import PurgeCore
import PurgeSys

/// The ledger follows every change the passthrough makes. Only regular
/// files and directories are counted; anything else is ignored. A change the
/// ledger refuses means it has drifted from the backing store (a change made
/// behind the mount's back): that is logged, never fatal, and the next mount
/// starts from a fresh walk.
extension ContainerState {
    /// `id`: the identity of the inode the new entry was handed out with.
    func noteCreated(_ status: stat, id: EntryID, name: CName, in parent: EntryID) {
        switch status.st_mode & S_IFMT {
        case S_IFREG:
            track { (ledger, _) throws(PurgeCoreError) in
                if ledger.contains(id) {
                    try ledger.addLink(id, parent: parent)
                } else {
                    try ledger.addFile(id, parent: parent, size: UInt64(status.st_size), allocated: Self.allocated(status))
                }
            }
        case S_IFDIR:
            track { (ledger, names) throws(PurgeCoreError) in
                try ledger.addDirectory(id, parent: parent)
                names.record(id, parent: parent, name: name)
                zones.update(after: id, in: &ledger, names: names)
            }
        default:
            break
        }
    }

    /// `id`: the file's identity, taken before the name went (`identity(of:)`).
    func noteRemoved(_ status: stat, id: EntryID, from parent: EntryID) {
        switch status.st_mode & S_IFMT {
        case S_IFREG:
            track { (ledger, _) throws(PurgeCoreError) in
                try ledger.removeLink(id, parent: parent)
                forgetFlagsIfGone(id, in: ledger)
            }
            clones.forgetIfGone(id, state: self)
            linked.removed(id, backing: EntryID(status), state: self)
        case S_IFDIR:
            track { (ledger, names) throws(PurgeCoreError) in
                try ledger.removeDirectory(id)
                forgetFlagsIfGone(id, in: ledger)
                names.remove(id)
                zones.update(after: nil, in: &ledger, names: names)
            }
        default:
            break
        }
    }

    /// `id`: the file's identity, taken before the move (`identity(of:)`).
    func noteMoved(_ status: stat, id: EntryID, from parent: EntryID, to newParent: EntryID, newName: CName) {
        let kind = status.st_mode & S_IFMT
        guard kind == S_IFREG || kind == S_IFDIR else { return }
        defer {
            if kind == S_IFREG {
                linked.moved(id, backing: EntryID(status), to: .init(parent: newParent, name: LinkedClones.bytes(newName)), state: self)
            }
        }
        track { (ledger, names) throws(PurgeCoreError) in
            try ledger.move(id, from: parent, to: newParent)
            if kind == S_IFDIR {
                names.record(id, parent: newParent, name: newName)
                zones.update(after: id, in: &ledger, names: names)
            }
        }
    }

    /// The file `id` (whose backing file now has `status`) changed size or data.
    func noteResized(_ status: stat, id: EntryID) {
        guard status.st_mode & S_IFMT == S_IFREG else { return }
        if clones.changed(id, state: self) || linked.changed(id, state: self) { return }
        track { (ledger, _) throws(PurgeCoreError) in
            try ledger.update(id, size: UInt64(status.st_size), allocated: Self.allocated(status))
        }
    }

    func noteOpened(_ id: EntryID) {
        track { (ledger, _) throws(PurgeCoreError) in
            try ledger.open(id)
            try ledger.markUsed(id)
        }
    }

    func noteClosed(_ id: EntryID) {
        track { (ledger, _) throws(PurgeCoreError) in
            try ledger.close(id)
            forgetFlagsIfGone(id, in: ledger)
        }
        clones.forgetIfGone(id, state: self)
        linked.forgetIfGone(id, state: self)
    }

    /// The identity of `name` in `parent`, whose backing file has `status`.
    func identity(of status: stat, name: CName, in parent: EntryID) -> EntryID {
        linked.identity(of: status, parent: parent, name: name)
    }

    func noteUsed(_ id: EntryID) {
        track { (ledger, _) throws(PurgeCoreError) in try ledger.markUsed(id) }
    }

    /// The members of a clone group in the order their shared data is
    /// charged: those a purge cannot take first (outside the zones, or
    /// pinned), so purging the others frees nothing of it; otherwise as given.
    func chargingOrder<Member>(_ members: [Member], id: (Member) -> EntryID) -> [Member] {
        let purgeable = read { ledger, _ in members.map { ledger.isPurgeable(id($0)) } }
        var first: [Member] = [], last: [Member] = []
        for (member, reachable) in zip(members, purgeable) {
            if reachable { last.append(member) } else { first.append(member) }
        }
        return first + last
    }

    /// Bytes the file occupies on disk.
    static func allocated(_ status: stat) -> UInt64 {
        UInt64(status.st_blocks) * 512
    }

    private func track(_ change: (inout Ledger, inout DirectoryNames) throws(PurgeCoreError) -> Void, in step: String = #function) {
        do {
            try withLedger { (ledger, names) throws(PurgeCoreError) in
                defer { peakUsage = max(peakUsage, ledger.usage) }
                try change(&ledger, &names)
            }
        } catch {
            Diagnostics.note("accounting drifted from the backing store (\(step)): \(error)")
        }
        saveFlagsIfChanged()
    }
}
