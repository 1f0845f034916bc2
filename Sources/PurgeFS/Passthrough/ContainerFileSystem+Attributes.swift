import CFuse
import Glibc
import PurgeCore
import PurgeSys

/// Extended attributes, statfs and access.
///
/// `user.purgefs.*` names are answered by their features (`AttributeProviders`) and never
/// reach the backing store; every other name is the container's own and
/// passes through. They are reached through the inode's `/proc/self/fd`
/// link, which for a symlink would follow it; Linux allows no `user.*`
/// attributes on symlinks, so a symlink answers as one without attributes.
extension ContainerFileSystem {
    /// A purgefs name's value, or nil for a name that is not purgefs's.
    func virtualValue(of id: NodeID, name: CName) throws(Errno) -> [UInt8]? {
        switch PurgeAttribute.parse(name) {
        case .foreign: return nil
        case .unknown: throw Errno.noData
        case .known(let attribute):
            return Array(try attributeProviders.value(of: attribute, on: inodes.inode(id)).utf8)
        }
    }

    /// With an empty buffer, the size of the value (the size probe).
    func extendedAttribute(of id: NodeID, name: CName, into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        if let value = try virtualValue(of: id, name: name) {
            // A probe answers the largest size the value can have, so a value
            // that changes before the read still fits.
            if buffer.count == 0 { return max(value.count, AttributeProviders.probeSize) }
            guard value.count <= buffer.count else { throw Errno.outOfRange }
            buffer.copyBytes(from: value)
            return value.count
        }
        let inode = inodes.inode(id)
        if inode.isSymbolicLink { throw Errno.noData }
        // An open file's descriptor takes the call as it is: no path walk,
        // which a writer's every refresh of `security.capability` would pay.
        return try withAttributeHolderTellingLent(inode) { (file, lent) throws(Errno) in
            lent ? try file.openFileExtendedAttribute(name, into: buffer) : try file.extendedAttribute(name, into: buffer)
        }
    }

    func setExtendedAttribute(
        of id: NodeID, name: CName, value: UnsafeRawBufferPointer, flags: Int32, caller: uid_t
    ) throws(Errno) {
        let inode = inodes.inode(id)
        switch PurgeAttribute.parse(name) {
        case .foreign:
            if inode.isSymbolicLink { throw Errno.notPermitted }
            try withAttributeHolder(inode) { (file) throws(Errno) in try file.setExtendedAttribute(name, value: value, flags: flags) }
            if Self.changesMode(name) { notifier.invalidateAttributes(of: id) }
        case .unknown:
            throw Errno.invalidArgument
        case .known(let attribute):
            try attributeProviders.set(attribute, on: inode, value: Array(value), caller: caller)
        }
    }

    /// An access ACL carries the mode's permission bits: setting it (as
    /// `cp -p` does) changes the mode the kernel has cached.
    private static func changesMode(_ name: CName) -> Bool {
        CNames.equal(name, "system.posix_acl_access")
    }

    /// The container's own names: purgefs names are answered on request
    /// only, and any stored in the backing store are not shown.
    func listExtendedAttributes(of id: NodeID, into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        let inode = inodes.inode(id)
        if inode.isSymbolicLink { return 0 }
        let names = try withAttributeHolder(inode) { (file) throws(Errno) -> [UInt8] in
            var names = [UInt8](repeating: 0, count: max(try file.listExtendedAttributes(into: .init(start: nil, count: 0)), 1))
            let count = try names.withUnsafeMutableBytes { raw in
                Result { () throws(Errno) -> Int in try file.listExtendedAttributes(into: raw) }
            }.get()
            return Array(names[..<count])
        }
        let prefix = Array(PurgeAttribute.prefix.utf8)
        var shown: [UInt8] = []
        for name in names.split(separator: 0, omittingEmptySubsequences: true)
        where !name.starts(with: prefix) {
            shown += name
            shown.append(0)
        }
        if buffer.count == 0 { return shown.count }
        guard shown.count <= buffer.count else { throw Errno.outOfRange }
        buffer.copyBytes(from: shown)
        return shown.count
    }

    func removeExtendedAttribute(of id: NodeID, name: CName) throws(Errno) {
        let inode = inodes.inode(id)
        switch PurgeAttribute.parse(name) {
        case .foreign:
            if inode.isSymbolicLink { throw Errno.noData }
            try withAttributeHolder(inode) { (file) throws(Errno) in try file.removeExtendedAttribute(name) }
            if Self.changesMode(name) { notifier.invalidateAttributes(of: id) }
        case .unknown:
            throw Errno.noData
        case .known(let attribute):
            // Removing a flag clears it; nothing else can be removed.
            try attributeProviders.remove(attribute, on: inode)
        }
    }

    /// The device as the mount shows it, from the same `SpaceStatus` as the
    /// attributes: size C, free F and available A, in the backing
    /// filesystem's blocks, so `df` shows Size C, Used the device used (C − F)
    /// rounded up to a block and Avail A rounded down.
    func fileSystemStatus() throws(Errno) -> statvfs {
        var figures = try root.fileSystemStatus()
        let status = space.spaceStatus()
        let blocks = status.blockFigures(unit: UInt64(figures.f_frsize))
        figures.f_blocks = fsblkcnt_t(blocks.blocks)
        figures.f_bfree = fsblkcnt_t(blocks.free)
        figures.f_bavail = fsblkcnt_t(blocks.available)
        return figures
    }

    /// Checks access as the caller, groups included.
    func checkAccess(_ id: NodeID, mask: Int32, caller: CallerIdentity) throws(Errno) {
        let inode = inodes.inode(id)
        if mask == F_OK { return }  // it exists: the kernel just looked it up
        try withAttributeHolder(inode) { (file) throws(Errno) in
            try caller.perform { () throws(Errno) in try file.checkAccess(mask) }
        }
    }
}
