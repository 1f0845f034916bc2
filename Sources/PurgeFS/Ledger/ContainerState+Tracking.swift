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
            track { (books) throws(PurgeCoreError) in
                if books.ledger.contains(id) {
                    try books.ledger.addLink(id, parent: parent)
                } else {
                    try books.ledger.addFile(id, parent: parent, size: UInt64(status.st_size), allocated: Self.allocated(status))
                }
            }
        case S_IFDIR:
            track { (books) throws(PurgeCoreError) in
                try books.ledger.addDirectory(id, parent: parent)
                books.names.record(id, parent: parent, name: name)
                books.zones.update(after: id, in: &books.ledger, names: books.names)
            }
        default:
            break
        }
    }

    /// `id`: the file's identity, taken before the name went (`identity(of:)`).
    func noteRemoved(_ status: stat, id: EntryID, from parent: EntryID) {
        switch status.st_mode & S_IFMT {
        case S_IFREG:
            track { (books) throws(PurgeCoreError) in
                try books.ledger.removeLink(id, parent: parent)
                books.forgetFlagsIfGone(id)
            }
        case S_IFDIR:
            track { (books) throws(PurgeCoreError) in
                try books.ledger.removeDirectory(id)
                books.forgetFlagsIfGone(id)
                books.names.remove(id)
                books.zones.update(after: nil, in: &books.ledger, names: books.names)
            }
        default:
            break
        }
    }

    /// `id`: the file's identity, taken before the move (`identity(of:)`).
    func noteMoved(_ status: stat, id: EntryID, from parent: EntryID, to newParent: EntryID, newName: CName) {
        let kind = status.st_mode & S_IFMT
        guard kind == S_IFREG || kind == S_IFDIR else { return }
        track { (books) throws(PurgeCoreError) in
            try books.ledger.move(id, from: parent, to: newParent)
            if kind == S_IFDIR {
                books.names.record(id, parent: newParent, name: newName)
                books.zones.update(after: id, in: &books.ledger, names: books.names)
            }
        }
    }

    /// The file `id` (whose backing file now has `status`) changed size or
    /// data: its figures as they are. A clone's are its group's charges
    /// instead: the clone backend calls this only for files it does not charge.
    func noteResized(_ status: stat, id: EntryID) {
        guard status.st_mode & S_IFMT == S_IFREG else { return }
        track { (books) throws(PurgeCoreError) in
            try books.ledger.update(id, size: UInt64(status.st_size), allocated: Self.allocated(status))
        }
    }

    func noteOpened(_ id: EntryID) {
        track { (books) throws(PurgeCoreError) in
            try books.ledger.open(id)
            try books.ledger.markUsed(id)
        }
    }

    func noteClosed(_ id: EntryID) {
        track { (books) throws(PurgeCoreError) in
            try books.ledger.close(id)
            books.forgetFlagsIfGone(id)
        }
    }

    func noteUsed(_ id: EntryID) {
        track { (books) throws(PurgeCoreError) in try books.ledger.markUsed(id) }
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

    private func track(_ change: (inout Books) throws(PurgeCoreError) -> Void, in step: String = #function) {
        do {
            try withBooks { (books) throws(PurgeCoreError) in
                defer { books.peakUsage = max(books.peakUsage, books.ledger.usage) }
                try change(&books)
            }
        } catch {
            Diagnostics.note("accounting drifted from the backing store (\(step)): \(error)")
        }
        saveFlagsIfChanged()
    }
}
