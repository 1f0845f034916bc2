import PurgeCore
import PurgeSys

/// `user.purgefs.pinned`, `group` and `tombstone`: set in the ledger, kept
/// in the state directory. `excluded_from_backup` is kept the same way but
/// is nothing to the ledger (purging ignores it).
extension ContainerFileSystem {
    func setFlag(_ attribute: PurgeAttribute, _ on: Bool, for inode: Inode) throws(Errno) {
        let id = inode.key
        // Read before the lock: it tells this inode from an earlier one with its number.
        let born = (try? inode.withDescriptor { (file) throws(Errno) -> UInt64? in
            StoredFlags.birthTime(of: id, holding: try file.status()) { () throws(Errno) in try file.birthTime() }
        }) ?? nil
        try state.withBooks { (books) throws(Errno) in
            do throws(FlagError) {
                try Self.apply(attribute, on, to: id, in: &books.ledger)
            } catch {
                switch error {
                case .notInZone: throw Errno.invalidArgument
                case .core(let error): throw Errno(error)
                }
            }
            books.flags.set(StoredFlags.Flags(attribute), on, for: id, born: born)
            books.flagsChanged = true
        }
        state.saveFlagsIfChanged()
    }

    private enum FlagError: Error {
        /// `group` and `tombstone` apply only inside purgeable zones.
        case notInZone
        case core(PurgeCoreError)
    }

    private static func apply(_ attribute: PurgeAttribute, _ on: Bool, to id: EntryID, in ledger: inout Ledger) throws(FlagError) {
        switch attribute {
        case .group, .tombstone:
            let inZone: Bool
            do { inZone = try ledger.directory(id).isInZone } catch { throw .core(error) }
            guard inZone else { throw .notInZone }
            do {
                if attribute == .group { try ledger.setGroup(id, on) } else { try ledger.setTombstone(id, on) }
            } catch {
                throw .core(error)
            }
        case .excludedFromBackup:
            guard ledger.contains(id) else { throw .core(.unknownEntry(id)) }
        default:
            do { try ledger.setPinned(id, on) } catch { throw .core(error) }
        }
    }
}

extension StoredFlags.Flags {
    init(_ attribute: PurgeAttribute) {
        switch attribute {
        case .group: self = .group
        case .tombstone: self = .tombstone
        case .excludedFromBackup: self = .excludedFromBackup
        default: self = .pinned
        }
    }
}
