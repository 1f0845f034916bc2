import CFuse
import Glibc
import PurgeCore
import PurgeSys

/// Operations on names and inode attributes.
extension ContainerFileSystem {
    func lookup(parent: NodeID, name: CName) throws(Errno) -> fuse_entry_param {
        try lookUp(name, in: inodes.inode(parent))
    }

    func forget(_ id: NodeID, count: UInt64) {
        guard id != .root else { return }
        inodes.forget(id, count: count)
    }

    func setAttributes(
        of id: NodeID, to new: stat, changing fields: Int32, handle: OpenFile?, caller: CallerIdentity
    ) throws(Errno) -> stat {
        let inode = inodes.inode(id)
        // New data or times on an evicted file: its data comes back first.
        let touchesContent = fields & (FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME
            | FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW) != 0
        if touchesContent { try events.beginOpen(inode) }
        defer { if touchesContent { events.endOpen(inode) } }
        if fields & FUSE_SET_ATTR_SIZE != 0 {
            try truncate(inode, to: new.st_size, through: handle)
        }
        try withAttributeHolder(inode) { (file) throws(Errno) in
            try setAttributes(through: file, to: new, changing: fields)
        }
        // A new mode is the caller's to choose; otherwise a truncation or chown may clear suid/sgid.
        if fields & FUSE_SET_ATTR_MODE == 0 { try clearSetIDIfAsked(inode, caller: caller, notifying: false) }
        // A document's new size or times reach the remote like a write's (after the debounce).
        if touchesContent && inode.isRegularFile { events.changed(inode.key) }
        return try attributes(of: inode)
    }

    /// Mode, owner and times (the size is set apart: a clone's data and its
    /// attributes live in different inodes).
    private func setAttributes(through file: FileDescriptor, to new: stat, changing fields: Int32) throws(Errno) {
        if fields & FUSE_SET_ATTR_MODE != 0 {
            try file.changeMode(new.st_mode & 0o7777)
        }
        let setsUser = fields & FUSE_SET_ATTR_UID != 0
        let setsGroup = fields & FUSE_SET_ATTR_GID != 0
        if setsUser || setsGroup {
            try file.changeOwner(user: setsUser ? new.st_uid : uid_t.max, group: setsGroup ? new.st_gid : gid_t.max)
        }
        let setsAccess = fields & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW) != 0
        let setsModification = fields & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW) != 0
        if setsAccess || setsModification {
            let access = fields & FUSE_SET_ATTR_ATIME_NOW != 0 ? TimeSpec.now
                : fields & FUSE_SET_ATTR_ATIME != 0 ? new.st_atim : TimeSpec.omit
            let modification = fields & FUSE_SET_ATTR_MTIME_NOW != 0 ? TimeSpec.now
                : fields & FUSE_SET_ATTR_MTIME != 0 ? new.st_mtim : TimeSpec.omit
            try file.setTimes(access: access, modification: modification)
        }
    }

    /// Truncation allocates nothing, growing or not: a longer file ends in
    /// a hole, so it asks for no room (a size past what the backing
    /// filesystem allows is its `EFBIG`). A clone gets data of its own
    /// first (none copied when cut to nothing).
    private func truncate(_ inode: Inode, to size: off_t, through handle: OpenFile?) throws(Errno) {
        if let handle {
            try growing(handle, by: .none, change: .resize(to: UInt64(max(size, 0)))) { () throws(Errno) in
                if try truncateThroughView(inode, to: size) { return }
                try handle.descriptor.truncate(to: Int64(size))
            }
            return
        }
        try modifying(inode, keepingData: size > 0, change: .resize(to: UInt64(max(size, 0)))) { () throws(Errno) in
            if try truncateThroughView(inode, to: size) {
                if let status = try? inode.withDescriptor({ (file) throws(Errno) in try file.status() }) { events.resized(status, id: inode.key) }
                return
            }
            // The descriptor as it is after a break: the inode's own data.
            try inode.withDescriptor { (file) throws(Errno) in
                try file.truncateThroughPath(to: Int64(size))
                if let status = try? file.status() { events.resized(status, id: inode.key) }
            }
        }
    }

    /// Truncates a file with a data view through it (`DataViews.withView`);
    /// false when `inode` has none.
    private func truncateThroughView(_ inode: Inode, to size: off_t) throws(Errno) -> Bool {
        guard try dataViews.view(of: inode.key) != nil else { return false }
        guard size >= 0 else { throw Errno.invalidArgument }
        return try dataViews.withView(of: inode) { (view) throws(Errno) in try view.truncate(to: UInt64(size)) } != nil
    }

    func readSymbolicLink(_ id: NodeID) throws(Errno) -> [CChar] {
        var target = try inodes.inode(id).withDescriptor { (link) throws(Errno) in try link.readSymbolicLink() }
        target.append(0)
        return target
    }

    func makeNode(parent: NodeID, name: CName, mode: mode_t, device: dev_t, caller: CallerIdentity) throws(Errno) -> fuse_entry_param {
        try creating(name, in: parent) { (directory) throws(Errno) in
            try caller.perform { () throws(Errno) in try directory.makeNode(name, mode: mode, device: device) }
        }
    }

    func makeDirectory(parent: NodeID, name: CName, mode: mode_t, caller: CallerIdentity) throws(Errno) -> fuse_entry_param {
        try creating(name, in: parent) { (directory) throws(Errno) in
            try caller.perform { () throws(Errno) in try directory.makeDirectory(name, mode: mode) }
        }
    }

    func makeSymbolicLink(parent: NodeID, name: CName, target: CName, caller: CallerIdentity) throws(Errno) -> fuse_entry_param {
        try creating(name, in: parent) { (directory) throws(Errno) in
            try caller.perform { () throws(Errno) in try directory.makeSymbolicLink(name, target: target) }
        }
    }

    func makeHardLink(to id: NodeID, parent: NodeID, name: CName) throws(Errno) -> fuse_entry_param {
        let file = inodes.inode(id)
        try events.beforeModify(file, .link, breaking: breaking)
        let entry = try creating(name, in: parent) { (directory) throws(Errno) in
            try file.withDescriptor { (source) throws(Errno) in try source.link(as: name, in: directory) }
        }
        // A name in a ubiquitous zone: the document goes to the remote (after the debounce).
        if file.isRegularFile { events.changed(file.key) }
        return entry
    }

    /// Makes `name` in `parent` with `make`, under the directory's namespace
    /// lock, and counts what it made.
    /// `make` gets the parent directory's descriptor.
    private func creating(_ name: CName, in parent: NodeID, _ make: (FileDescriptor) throws(Errno) -> Void) throws(Errno) -> fuse_entry_param {
        let directory = try creatableDirectory(parent, name)
        return try locks.withLocks(directory.key) { () throws(Errno) -> fuse_entry_param in
            try directory.withDescriptor { (descriptor) throws(Errno) in try make(descriptor) }
            let entry = try lookUp(name, in: directory)
            events.created(entry.attr, id: inodes.inode(NodeID(entry.ino)).key, name: name, in: directory.key)
            return entry
        }
    }

    func unlink(parent: NodeID, name: CName, directory isDirectory: Bool) throws(Errno) {
        let directory = inodes.inode(parent)
        if isHidden(name, in: directory) { throw Errno.noEntry }
        try locks.withLocks(directory.key) { () throws(Errno) in
            try directory.withDescriptor { (descriptor) throws(Errno) in
                let child = try? descriptor.status(of: name)
                let id = child.map { identity(of: $0, name: name, in: directory.key) }
                if let child { events.beforeRemove(child, name: name, in: descriptor, parent: directory.key) }
                do throws(Errno) { try descriptor.unlink(name, directory: isDirectory) } catch {
                    if let child { events.removeAbandoned(child, name: name, parent: directory.key) }
                    throw error
                }
                if let child, let id {
                    events.removed(child, id: id, name: name, from: directory.key)
                }
            }
        }
    }

    func rename(parent: NodeID, name: CName, newParent: NodeID, newName: CName, flags: UInt32) throws(Errno) {
        let source = inodes.inode(parent)
        let destination = inodes.inode(newParent)
        if isHidden(name, in: source) { throw Errno.noEntry }
        if isHidden(newName, in: destination) { throw Errno.notPermitted }
        let renameFlags = RenameFlags(rawValue: flags)
        // The kernel holds both parents locked for this request, so what the
        // names are now is what they are at the rename.
        func isDirectory(_ name: CName, in directory: Inode) -> Bool {
            let status = directory.withDescriptorQuietly { try? $0.status(of: name) } ?? nil
            return (status?.st_mode ?? 0) & S_IFMT == S_IFDIR
        }
        let movesDirectory = isDirectory(name, in: source) || isDirectory(newName, in: destination)
        if movesDirectory {
            try locks.withTreeLock { () throws(Errno) in
                try rename(name, in: source, to: newName, in: destination, flags: renameFlags)
            }
        } else {
            try rename(name, in: source, to: newName, in: destination, flags: renameFlags)
        }
    }

    private func rename(
        _ name: CName, in source: Inode, to newName: CName, in destination: Inode, flags renameFlags: RenameFlags
    ) throws(Errno) {
        try locks.withLocks(source.key, destination.key) { () throws(Errno) in
            let (moving, replaced) = try source.withDescriptor { (from) throws(Errno) -> (stat?, stat?) in
                try destination.withDescriptor { (to) throws(Errno) -> (stat?, stat?) in
                    let moving = try? from.status(of: name)
                    let replaced = try? to.status(of: newName)
                    let replacing = moving != nil && replaced != nil && !renameFlags.contains(.exchange) && EntryID(replaced!) != EntryID(moving!)
                    if replacing { events.beforeRemove(replaced!, name: newName, in: to, parent: destination.key) }
                    // The names that will move (none between two names of one backing file: rename(2) does nothing).
                    var moves: [(status: stat, id: EntryID, name: CName, parent: EntryID)] = []
                    if let moving, replaced.map({ EntryID($0) != EntryID(moving) }) ?? true {
                        moves.append((moving, identity(of: moving, name: name, in: source.key), name, source.key))
                        if let replaced, renameFlags.contains(.exchange) {
                            moves.append((replaced, identity(of: replaced, name: newName, in: destination.key), newName, destination.key))
                        }
                    }
                    for (index, move) in moves.enumerated() {
                        let (other, otherParent) = index == 0 ? (newName, destination.key) : (name, source.key)
                        events.beforeMove(move.status, id: move.id, name: move.name, from: move.parent, newName: other, to: otherParent)
                    }
                    do throws(Errno) { try from.rename(name, to: newName, in: to, flags: renameFlags) } catch {
                        if replacing { events.removeAbandoned(replaced!, name: newName, parent: destination.key) }
                        for move in moves { events.moveAbandoned(move.status, id: move.id, name: move.name, from: move.parent) }
                        throw error
                    }
                    return (moving, replaced)
                }
            }
            guard let moving else { return }
            let movingID = identity(of: moving, name: name, in: source.key)
            let replacedID = replaced.map { identity(of: $0, name: newName, in: destination.key) }
            if let replaced, EntryID(replaced) == EntryID(moving) {
                // Two names of one backing file: rename(2) did nothing. Two names
                // of one file, so nothing moved; but a clone and the file it
                // shares data with are two files, and the moved one takes the name.
                guard replacedID != movingID, !renameFlags.contains(.exchange) else {
                    if replacedID != movingID, let replacedID {
                        events.exchanged(Exchange(
                            moving: moving, movingID: movingID, name: name, parent: source.key,
                            replaced: replaced, replacedID: replacedID, newName: newName, newParent: destination.key,
                            oneBackingFile: true))
                    }
                    return
                }
                try source.withDescriptor { (from) throws(Errno) in try from.unlink(name) }
            }
            if let replaced, let replacedID, renameFlags.contains(.exchange) {
                events.exchanged(Exchange(
                    moving: moving, movingID: movingID, name: name, parent: source.key,
                    replaced: replaced, replacedID: replacedID, newName: newName, newParent: destination.key,
                    oneBackingFile: false))
                return
            }
            if let replaced, let replacedID {
                events.renamedOver(moving, id: movingID, name: name, from: source.key, newName: newName, to: destination.key,
                                   replacing: replaced, replacedID: replacedID)
                return
            }
            events.moved(moving, id: movingID, name: name, from: source.key, newName: newName, to: destination.key)
        }
    }

    /// The directory `parent`, where `name` may be created: the state
    /// directory's name is reserved (`EPERM`), whatever the caller makes.
    func creatableDirectory(_ parent: NodeID, _ name: CName) throws(Errno) -> Inode {
        let directory = inodes.inode(parent)
        if isHidden(name, in: directory) { throw Errno.notPermitted }
        return directory
    }
}
