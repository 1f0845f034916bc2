import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// Answers and applies the `user.purgefs.*` attributes from the ledger and
/// the device model. Values are decimal ASCII without a newline.
///
/// Error precedence for a purgefs name: unknown name, or one that does not
/// apply to the path, first (`ENODATA` on read, `EINVAL` on write); then
/// permission for control attributes (`EPERM`); then the value (`EINVAL`).
struct VirtualAttributes {
    let filesystem: ContainerFileSystem

    /// The longest value any numeric attribute can have: a size probe answers
    /// this, so a value that grows between probe and read still fits.
    static let probeSize = 20

    /// The value of `attribute` on `inode`.
    func value(of attribute: PurgeAttribute, on inode: Inode) throws(Errno) -> String {
        let target = Self.target(of: inode)
        guard attribute.isReadable(on: target) else { throw Errno.noData }
        let state = filesystem.state
        let id = inode.key
        switch attribute {
        case .size, .files, .allocated, .purgeable, .cloneSavings:
            if target == .file {
                let info = try fileInfo(id)
                switch attribute {
                case .size: return String(info.size)
                case .allocated: return String(info.allocated)
                case .purgeable: return info.isInZone ? "1" : "0"
                default: throw Errno.noData
                }
            }
            let totals = try directoryInfo(id).totals
            switch attribute {
            case .size: return String(totals.size)
            case .files: return String(totals.files)
            case .allocated: return String(totals.allocated)
            case .purgeable: return String(totals.purgeable)
            default: return String(totals.cloneSavings)
            }
        case .capacity, .external, .available, .containerUsed, .deviceUsed, .availableImportant, .availableOpportunistic:
            filesystem.device?.readNeighbours(state)  // another member's write shows at once
            let status = state.status()
            switch attribute {
            case .capacity: return String(status.capacity)
            case .external: return String(status.external)
            case .available: return String(status.available)
            case .containerUsed: return String(status.containerUsed)
            case .deviceUsed: return String(status.deviceUsed)
            case .availableImportant: return String(status.availableImportant)
            default: return String(status.availableOpportunistic)
            }
        case .faults:
            return filesystem.faults.listing
        case .cloud:
            guard let cloud = filesystem.cloud else { throw Errno.noData }
            return cloud.remote.isOffline ? "offline" : "online"
        case .deviceName, .deviceContainers, .deviceContainersUsed, .devicePurgeable, .deviceQuota:
            return try deviceValue(of: attribute)
        case .purgedBytes:
            return String(state.purgeCounters.bytes)
        case .purgedFiles:
            return String(state.purgeCounters.files)
        case .enospc:
            return String(filesystem.noSpaceReplies.load(ordering: .relaxed))
        case .peakUsed:
            return String(state.peakUsed)
        case .monitorRounds:
            return String(filesystem.monitor.rounds.load(ordering: .acquiring))
        case .pinned:
            return target == .file ? flag(try fileInfo(id).isPinned) : flag(try directoryInfo(id).isPinned)
        case .excludedFromBackup:
            if target == .file { _ = try fileInfo(id) } else { _ = try directoryInfo(id) }
            return flag(state.withBooks { $0.flags.flags(of: id) }.contains(.excludedFromBackup))
        case .group, .tombstone:
            let info = try directoryInfo(id)
            guard info.isInZone else { throw Errno.noData }
            return flag(attribute == .group ? info.isGroup : info.isTombstone)
        case .lastUsed:
            return String(try fileInfo(id).lastUsed / 1_000_000_000)
        case .contentID:
            _ = try fileInfo(id)
            return String(filesystem.clones.contentID(of: id))
        case .shared:
            _ = try fileInfo(id)
            return String(filesystem.clones.sharedBytes(of: id))
        case .ubiquitous, .uploaded, .downloadStatus, .evictable:
            guard let cloud = filesystem.cloud else { throw Errno.noData }
            return try cloud.value(of: attribute, on: inode)
        case .crash:
            guard filesystem.crashes.keep != nil else { throw Errno.noData }  // not `crashable`
            return Self.fitting(filesystem.pendingCrash())
        case .lastCrash:
            return Self.fitting(filesystem.crashes.lastReport.withLock { $0 })
        case .transport:
            return KernelWire.transport
        case .purge, .evict, .download, .metricsSample:
            throw Errno.noData
        }
    }

    /// Applies a write of `attribute` on `inode` by `caller`.
    func set(_ attribute: PurgeAttribute, on inode: Inode, value: [UInt8], caller: uid_t) throws(Errno) {
        let target = Self.target(of: inode)
        guard attribute.isWritable(on: target) else { throw Errno.invalidArgument }
        if attribute.isControl && caller != 0 && caller != DaemonIdentity.shared.user { throw Errno.notPermitted }
        let text = String(decoding: Self.trimmed(value), as: UTF8.self)
        switch attribute {
        case .capacity, .external:
            // The rule the mount options and `purgefs space` follow; the reason goes to the daemon log.
            do throws(OptionError) {
                let bytes: UInt64
                do throws(ValueError) {
                    bytes = attribute == .capacity ? try CapacityModel.capacity(parsing: text) : try CapacityModel.external(parsing: text)
                } catch {
                    throw OptionError.invalidValue(option: attribute.rawValue, value: text, reason: error)
                }
                if let device = filesystem.device {
                    // A shared device: checked against every member's usage, written for all.
                    try device.change(capacity: attribute == .capacity ? bytes : nil,
                                      external: attribute == .external ? bytes : nil, filesystem.state)
                } else if attribute == .capacity {
                    try filesystem.state.changeDevice(capacity: bytes)
                } else {
                    try filesystem.state.changeDevice(external: bytes)
                }
            } catch {
                Diagnostics.note("refused \(attribute.fullName)=\(text.prefix(64)): \(error)")
                throw Errno.invalidArgument
            }
            filesystem.monitor.kick()
        case .purge:
            if text == "all" {
                filesystem.purger.purge(.all, reason: .manual)
            } else {
                guard let size = try? ByteSize(parsing: text) else { throw Errno.invalidArgument }
                filesystem.purger.purge(.bytes(size.bytes), reason: .manual)
            }
        case .crash:
            guard filesystem.crashes.keep != nil, text == "1" else { throw Errno.invalidArgument }
            let report = filesystem.crash()
            filesystem.crashes.lastReport.withLock { $0 = report }
        case .pinned, .group, .tombstone:
            guard let on = PurgeAttribute.parseFlag(value) else { throw Errno.invalidArgument }
            try filesystem.setFlag(attribute, on, for: inode)
        case .excludedFromBackup:
            guard let on = PurgeAttribute.parseFlag(value) else { throw Errno.invalidArgument }
            // As chmod: the file's owner or root (a flag about the file, not its data).
            let owner = try inode.withDescriptor { (file) throws(Errno) in try file.status().st_uid }
            guard caller == 0 || caller == owner else { throw Errno.notPermitted }
            try filesystem.setFlag(attribute, on, for: inode)
        case .metricsSample:
            guard text == "1" else { throw Errno.invalidArgument }
            // Signals the sampler's thread and returns: the handler never waits for the sample.
            filesystem.metricsRequests.requestSample()
        case .evict, .download:
            guard let cloud = filesystem.cloud else { throw Errno.invalidArgument }
            try cloud.set(attribute, on: inode, value: text)
        case .faults:
            try filesystem.faults.apply(text)
        case .cloud:
            guard let cloud = filesystem.cloud else { throw Errno.invalidArgument }
            try cloud.control(text)
        default:
            throw Errno.invalidArgument
        }
    }

    static func target(of inode: Inode) -> PurgeAttribute.Target {
        if inode.id == .root { return .root }
        if inode.isDirectory { return .directory }
        return inode.isRegularFile ? .file : .other
    }

    private func fileInfo(_ id: EntryID) throws(Errno) -> FileInfo {
        guard let info = filesystem.state.read({ ledger, _ in try? ledger.file(id) }) else { throw Errno.noData }
        return info
    }

    private func directoryInfo(_ id: EntryID) throws(Errno) -> DirectoryInfo {
        guard let info = filesystem.state.read({ ledger, _ in try? ledger.directory(id) }) else { throw Errno.noData }
        return info
    }

    /// Report lines, one per line, within an attribute value's 64 KiB: the
    /// lines past that are counted in a last line.
    static func fitting(_ lines: [String]) -> String {
        var text = ""
        for (index, line) in lines.enumerated() {
            if text.utf8.count + line.utf8.count + 1 > 60_000 {
                return text + "... and \(lines.count - index) more\n"
            }
            text += line + "\n"
        }
        return text
    }

    private func flag(_ on: Bool) -> String { on ? "1" : "0" }

    /// The value without one trailing newline or NUL, as `setfattr` or `echo` may leave.
    private static func trimmed(_ bytes: [UInt8]) -> ArraySlice<UInt8> {
        var slice = bytes[...]
        if let last = slice.last, last == 0x0A || last == 0 { slice = slice.dropLast() }
        return slice
    }
}
