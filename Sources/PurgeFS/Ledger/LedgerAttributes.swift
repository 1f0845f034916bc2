import PurgeCore
import PurgeSys

/// The ledger's names: a file's or a directory's figures (`size`, `files`,
/// `allocated`, `purgeable`, `clone_savings`, `last_used`) and its flags.
/// `pinned`, `group` and `tombstone` are set in the ledger and kept in the
/// state directory; `excluded_from_backup` is kept the same way but is
/// nothing to the ledger (purging ignores it).
struct LedgerAttributes: AttributeProvider {
    let state: ContainerState

    var attributes: [PurgeAttribute] {
        [.size, .files, .allocated, .purgeable, .cloneSavings, .lastUsed, .pinned, .group, .tombstone, .excludedFromBackup]
    }

    func value(of attribute: PurgeAttribute, on inode: Inode) throws(Errno) -> String {
        let target = AttributeProviders.target(of: inode)
        let id = inode.key
        switch attribute {
        case .size, .files, .allocated, .purgeable, .cloneSavings:
            if target == .file {
                let info = try state.fileInfo(id)
                switch attribute {
                case .size: return String(info.size)
                case .allocated: return String(info.allocated)
                case .purgeable: return info.isInZone ? "1" : "0"
                default: throw Errno.noData
                }
            }
            let totals = try state.directoryInfo(id).totals
            switch attribute {
            case .size: return String(totals.size)
            case .files: return String(totals.files)
            case .allocated: return String(totals.allocated)
            case .purgeable: return String(totals.purgeable)
            default: return String(totals.cloneSavings)
            }
        case .pinned:
            return target == .file ? flag(try state.fileInfo(id).isPinned) : flag(try state.directoryInfo(id).isPinned)
        case .excludedFromBackup:
            if target == .file { _ = try state.fileInfo(id) } else { _ = try state.directoryInfo(id) }
            return flag(state.withBooks { $0.flags.flags(of: id) }.contains(.excludedFromBackup))
        case .group, .tombstone:
            let info = try state.directoryInfo(id)
            guard info.isInZone else { throw Errno.noData }
            return flag(attribute == .group ? info.isGroup : info.isTombstone)
        case .lastUsed:
            return String(try state.fileInfo(id).lastUsed / 1_000_000_000)
        default:
            throw Errno.noData
        }
    }

    func set(_ attribute: PurgeAttribute, on inode: Inode, to value: AttributeValue) throws(Errno) {
        guard let on = PurgeAttribute.parseFlag(value.bytes) else { throw Errno.invalidArgument }
        if attribute == .excludedFromBackup {
            // As chmod: the file's owner or root (a flag about the file, not its data).
            let owner = try inode.withDescriptor { (file) throws(Errno) in try file.status().st_uid }
            guard value.caller == 0 || value.caller == owner else { throw Errno.notPermitted }
        }
        try setFlag(attribute, on, for: inode)
    }

    /// Removing a flag clears it; nothing else can be removed.
    func remove(_ attribute: PurgeAttribute, on inode: Inode) throws(Errno) {
        guard [.pinned, .group, .tombstone].contains(attribute) else { throw Errno.noData }
        try setFlag(attribute, false, for: inode)
    }

    private func flag(_ on: Bool) -> String { on ? "1" : "0" }

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

extension ContainerState {
    /// The ledger's record of the file `id`; `ENODATA` for a file it does not hold.
    func fileInfo(_ id: EntryID) throws(Errno) -> FileInfo {
        guard let info = read({ ledger, _ in try? ledger.file(id) }) else { throw Errno.noData }
        return info
    }

    /// The ledger's record of the directory `id`; `ENODATA` for one it does not hold.
    func directoryInfo(_ id: EntryID) throws(Errno) -> DirectoryInfo {
        guard let info = read({ ledger, _ in try? ledger.directory(id) }) else { throw Errno.noData }
        return info
    }
}
