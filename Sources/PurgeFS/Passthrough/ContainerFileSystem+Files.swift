import CFuse
import CLinux
import Glibc
import PurgeCore
import PurgeSys

/// Operations on open files.
extension ContainerFileSystem {
    /// Opens the backing file for I/O with the caller's flags. `O_DIRECT` is
    /// honoured by the kernel's direct I/O mode instead, so the backing file
    /// needs no aligned buffers.
    func open(_ id: NodeID, flags: Int32) throws(Errno) -> OpenFile {
        let inode = inodes.inode(id)
        try events.beginOpen(inode)  // an evicted file is downloaded first
        defer { events.endOpen(inode) }
        // Truncating a clone: it gets a file of its own first, with nothing copied.
        if flags & O_TRUNC != 0 { try events.beforeModify(inode, .openTruncating, breaking: breaking) }
        // What O_TRUNC cuts is saved first (the crash simulation).
        if flags & O_TRUNC != 0 && inode.isRegularFile { events.willChangeData(inode, .resize(to: 0)) }
        // A writer of shared data reads it, read-only, until its first write.
        let file = try OpenFile.open(inode, flags: Self.backingFlags(flags), readOnly: Self.readOnly(flags))
        if inode.isRegularFile {
            events.opened(inode.key)
            if flags & O_TRUNC != 0 {
                events.changedData(inode, .resize(to: 0))
                noteFigures(of: file)
            }
        }
        return file
    }

    /// Creates and opens `name`. The kernel asks only for names it believes
    /// absent, but another opener may get there first: without `O_EXCL` the
    /// existing file is then opened as `open` opens it (a linked clone is
    /// given data of its own before `O_TRUNC`, never truncating what it
    /// shares), and counted as opened, not as created.
    func create(parent: NodeID, name: CName, mode: mode_t, flags: Int32, caller: CallerIdentity) throws(Errno) -> (fuse_entry_param, OpenFile) {
        let directory = try creatableDirectory(parent, name)
        let (entry, file, created) = try locks.withLocks(directory.key) { () throws(Errno) -> (fuse_entry_param, FileDescriptor, Bool) in
            let (file, created) = try directory.withDescriptor { (parent) throws(Errno) in
                try Self.openCreating(name, in: parent, mode: mode, flags: flags, caller: caller)
            }
            do throws(Errno) {
                let entry = try self.entry(for: try file.reopen(flags: OpenFlags.path), name: name, in: directory)
                if created {
                    let key = inodes.inode(NodeID(entry.ino)).key
                    // Open before the directory's lock goes: the purger checks
                    // under it, and must never take a file just made.
                    events.created(entry.attr, id: key, name: name, in: directory.key, opened: true)
                }
                return (entry, file, created)
            } catch {
                file.closeQuietly()
                throw error
            }
        }
        if !created {
            // Opened as the caller only to check the caller may; opened again the way `open` does it.
            file.closeQuietly()
            return (entry, try open(NodeID(entry.ino), flags: flags))
        }
        let inode = inodes.inode(NodeID(entry.ino))
        let open: OpenFile
        do { open = try OpenFile(descriptor: file, inode: inode, flags: Self.backingFlags(flags)) } catch {
            events.openAbandoned(inode.key)  // the descriptor went with the failed `OpenFile`
            throw error
        }
        return (entry, open)
    }

    /// Opens `name` in `parent`, creating it as the caller; returns whether it was created.
    private static func openCreating(
        _ name: CName, in parent: FileDescriptor, mode: mode_t, flags: Int32, caller: CallerIdentity
    ) throws(Errno) -> (FileDescriptor, Bool) {
        do {
            let file = try caller.perform { () throws(Errno) in
                try FileDescriptor.open(name, in: parent, flags: backingFlags(flags) | O_CREAT | O_EXCL | O_NOFOLLOW, mode: mode)
            }
            return (file, true)
        } catch where error == .exists && flags & O_EXCL == 0 {
            // As the caller: the kernel checked only that it may create here.
            // Not truncated here: the caller opens it again (see `create`).
            let file = try caller.perform { () throws(Errno) in
                try FileDescriptor.open(name, in: parent, flags: backingFlags(flags) & ~O_TRUNC | O_NOFOLLOW)
            }
            return (file, false)
        }
    }

    /// The file is closed: announced once, however many paths give it up
    /// (a failed reply, `release`, a failure after the open).
    func release(_ file: OpenFile) {
        if file.inode.isRegularFile && file.announceClosed() {
            events.closed(file.inode.key)
        }
    }

    func read(_ file: OpenFile) {
        events.used(file.inode.key)
    }

    /// `write_buf`: returns bytes written.
    func write(_ file: OpenFile, _ data: UnsafeMutablePointer<fuse_bufvec>, at offset: off_t) throws(Errno) -> Int {
        let length = fuse_buf_size(data)
        // Data still in the kernel's pipe cannot be written twice.
        let inMemory = data.pointee.buf.flags.rawValue & FUSE_BUF_IS_FD.rawValue == 0
        let written = try growing(file, by: .data(offset: UInt64(offset), length: UInt64(length)), writing: length,
                                  change: .overwrite(offset: UInt64(offset), length: UInt64(length)), retryable: inMemory) { () throws(Errno) -> Int in
            if try dataViews.view(of: file.inode.key) != nil { return try writeThroughView(file, data, at: offset) }
            let count = cfuse_write_bufvec_to_fd(data, file.descriptor.rawValue, offset, 1)
            if count < 0 { throw Errno(Int32(-count)) }
            return count
        }
        events.used(file.inode.key)
        // O_SYNC, O_DSYNC: this write is durable when it returns.
        if file.flags & O_DSYNC != 0 { events.synced(file.inode) }
        return written
    }

    /// Emulates close(2) on the caller's descriptor: POSIX locks and
    /// close-time errors (NFS, quotas) happen here, not at release.
    func flush(_ handle: FileDescriptor) throws(Errno) {
        try handle.duplicate().close()
    }

    /// A file with a data view syncs through it (a sparse member: its
    /// anchor, then its map's changes journaled), then its metadata.
    func sync(_ file: OpenFile, dataOnly: Bool) throws(Errno) {
        if try dataViews.withView(of: file.inode, { (view) throws(Errno) in try view.sync() }) != nil {
            if !dataOnly { try file.descriptor.sync() }
        } else {
            try file.descriptor.sync(dataOnly: dataOnly)
        }
        events.synced(file.inode)
    }

    /// A file with a data view punches a hole through it; any other
    /// allocation makes it plain first (its bytes copied: rare calls, whose
    /// meaning in what it does not hold itself the view does not keep).
    func allocate(_ file: OpenFile, mode: Int32, offset: Int64, length: Int64) throws(Errno) {
        try growing(file, by: Self.growth(ofFallocate: mode, offset: offset, length: length),
                    change: Self.change(ofFallocate: mode, offset: offset, length: length)) { () throws(Errno) in
            // Asked here, after `beforeModify`: a linked clone's first change may have given it a view.
            if try dataViews.view(of: file.inode.key) != nil {
                if mode & clinux_FALLOC_FL_PUNCH_HOLE != 0 {
                    guard offset >= 0, length > 0 else { throw Errno.invalidArgument }
                    let punched = try dataViews.withView(of: file.inode) { (view) throws(Errno) in
                        try view.punch(offset: UInt64(offset), length: UInt64(length))
                    }
                    if punched != nil { return }
                } else {
                    try dataViews.makePlain(file.inode)
                }
            }
            try file.descriptor.allocate(mode: mode, offset: offset, length: length)
        }
    }

    /// Writes a request's data through the file's view, under what orders
    /// its changes (a sparse member's data lock: the shared blocks it
    /// touches are copied first). Its view gone before that was taken, it
    /// is written as any file.
    private func writeThroughView(_ file: OpenFile, _ data: UnsafeMutablePointer<fuse_bufvec>, at offset: off_t) throws(Errno) -> Int {
        guard offset >= 0 else { throw Errno.invalidArgument }
        return try WriteData.copied(data) { (buffer, copied) throws(Errno) -> Int in
            let bytes = UnsafeRawBufferPointer(start: buffer, count: copied)
            let written = try dataViews.withView(of: file.inode) { (view) throws(Errno) -> Int in
                try view.write(bytes, at: UInt64(offset))
            }
            if let written { return written }
            return try file.descriptor.write(bytes, at: Int64(offset))
        }
    }

    /// What `fallocate` reserves: a plain allocation, `KEEP_SIZE` and
    /// `ZERO_RANGE` reserve the range's blocks (past the end of file too);
    /// punching, collapsing and inserting a range allocate nothing.
    static func growth(ofFallocate mode: Int32, offset: Int64, length: Int64) -> Growth {
        let freeing = clinux_FALLOC_FL_PUNCH_HOLE | clinux_FALLOC_FL_COLLAPSE_RANGE | clinux_FALLOC_FL_INSERT_RANGE
        guard mode & freeing == 0, offset >= 0, length > 0 else { return .none }
        return .data(offset: UInt64(offset), length: UInt64(length))
    }

    /// What `fallocate` changes of the data: punching or zeroing a range
    /// overwrites it, collapsing or inserting one moves everything after it,
    /// reserving changes no byte (the size may grow).
    static func change(ofFallocate mode: Int32, offset: Int64, length: Int64) -> DataChange {
        let start = UInt64(max(offset, 0))
        if mode & (clinux_FALLOC_FL_COLLAPSE_RANGE | clinux_FALLOC_FL_INSERT_RANGE) != 0 { return .shift(from: start) }
        if mode & (clinux_FALLOC_FL_PUNCH_HOLE | clinux_FALLOC_FL_ZERO_RANGE) != 0 {
            return .overwrite(offset: start, length: UInt64(max(length, 0)))
        }
        return .allocate
    }

    /// `SEEK_DATA`/`SEEK_HOLE` in a file with a data view answer from it
    /// (a sparse member's shared blocks are data); the rest from the backing file.
    func seek(_ file: OpenFile, offset: Int64, whence: Int32) throws(Errno) -> Int64 {
        if whence == clinux_SEEK_DATA || whence == clinux_SEEK_HOLE, let view = try dataViews.view(of: file.inode.key) {
            guard offset >= 0 else { throw Errno.invalidArgument }
            return Int64(try view.seek(to: UInt64(offset), whence: whence))
        }
        return try file.descriptor.seek(to: offset, whence: whence)
    }

    func copyRange(
        from source: OpenFile, at sourceOffset: Int64, to destination: OpenFile, at offset: Int64,
        length: Int, flags: UInt32
    ) throws(Errno) -> Int {
        if let cloned = copyPolicy.copy(from: source, at: sourceOffset, to: destination, at: offset, length: length, flags: flags) {
            return cloned
        }
        let range = (offset: UInt64(max(offset, 0)), length: UInt64(max(length, 0)))
        let copied = try growing(destination, by: .data(offset: range.offset, length: range.length), writing: length,
                                 change: .overwrite(offset: range.offset, length: range.length)) { () throws(Errno) -> Int in
            let from = try dataViews.view(of: source.inode.key), into = try dataViews.view(of: destination.inode.key)
            if from != nil || into != nil {
                return try copyThroughViews(from: source, from, at: sourceOffset, to: destination, into, at: offset, length: length)
            }
            return try destination.descriptor.copyRange(
                from: source.descriptor, sourceOffset: sourceOffset, offset: offset, length: length, flags: flags)
        }
        events.used(source.inode.key)
        events.used(destination.inode.key)
        return copied
    }

    /// `copy_file_range` with a side that has a data view: read through the
    /// source's view (or its descriptor), written through the destination's
    /// (`DataViews.withView`), a block at a time.
    private func copyThroughViews(
        from source: OpenFile, _ sourceView: (any DataView)?, at sourceOffset: Int64,
        to destination: OpenFile, _ destinationView: (any DataView)?, at offset: Int64, length: Int
    ) throws(Errno) -> Int {
        guard sourceOffset >= 0, offset >= 0 else { throw Errno.invalidArgument }
        let chunk = Int(BlockMap.blockSize)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        var done = 0
        while done < length {
            let part = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<min(chunk, length - done)])
            let at = Int64(done)
            let got: Int
            if let sourceView {
                got = try sourceView.read(into: part, at: UInt64(sourceOffset + at))
            } else {
                got = try source.descriptor.read(into: part, at: sourceOffset + at)
            }
            if got == 0 { break }
            let bytes = UnsafeRawBufferPointer(rebasing: part[0..<got])
            let wrote: Int
            if destinationView != nil, let viewWrote = try dataViews.withView(of: destination.inode, { (view) throws(Errno) -> Int in
                try view.write(bytes, at: UInt64(offset + at))
            }) {
                wrote = viewWrote
            } else {
                wrote = try destination.descriptor.write(bytes, at: offset + at)
            }
            done += wrote
            if wrote < got { break }
        }
        return done
    }

    private static func backingFlags(_ flags: Int32) -> Int32 {
        flags & ~(OpenFlags.direct | O_NOCTTY)
    }

    private static func readOnly(_ flags: Int32) -> Int32 {
        backingFlags(flags) & ~(O_ACCMODE | O_TRUNC | O_CREAT | O_EXCL) | O_RDONLY
    }

    /// Runs `body`, a change of the file's data through its descriptor, as
    /// a modification (`Inode.beginModifying`), announced first
    /// (`beforeModify`: a file that shares its data, a linked clone, gets
    /// data of its own and its writable descriptor back); no clone is made
    /// of it while `body` runs. Then `willChangeData` with `change`.
    func modifying<T>(_ file: OpenFile, change: DataChange, _ body: () throws(Errno) -> T) throws(Errno) -> T {
        while true {
            try events.beforeModify(file.inode, .data(file), breaking: breaking)
            if file.inode.sharing.beginModifying(through: file) { break }
        }
        defer { file.inode.sharing.endModifying() }
        events.willChangeData(file.inode, change)
        let result = try body()
        events.changedData(file.inode, change)
        return result
    }

    /// Runs `body` (a change of `file` that may grow it by `growth`, and
    /// a write of `writing` bytes into data it may share) with room
    /// reserved for it by the mount's growth policy, then records the
    /// file's new figures. A real device may still be full: on `ENOSPC` the
    /// change is tried once more after the policy freed room, when
    /// `retryable`.
    func growing<T>(
        _ file: OpenFile, by growth: Growth, writing: Int = 0, change: DataChange, retryable: Bool = true,
        _ body: () throws(Errno) -> T
    ) throws(Errno) -> T {
        let reserved = try growthPolicy.reserve(growth, of: file, writing: writing)
        // Whatever happened, the ledger gets the file's figures as they are now.
        defer {
            noteFigures(of: file)
            growthPolicy.release(reserved)
        }
        do {
            return try modifying(file, change: change, body)
        } catch where error == .noSpace && retryable {
            guard growthPolicy.freeRoom(afterNoSpace: reserved) else { throw error }
            return try modifying(file, change: change, body)
        }
    }

    /// Records the file's size and allocation after a change.
    func noteFigures(of file: OpenFile) {
        if let status = try? file.descriptor.status() { events.resized(status, id: file.inode.key) }
    }

    /// `modifying` for a change through the inode itself (no open file).
    func modifying<T>(_ inode: Inode, keepingData: Bool, change: DataChange, _ body: () throws(Errno) -> T) throws(Errno) -> T {
        while true {
            try events.beforeModify(inode, .truncate(keepingData: keepingData), breaking: breaking)
            if inode.sharing.beginModifying() { break }
        }
        defer { inode.sharing.endModifying() }
        if inode.isRegularFile { events.willChangeData(inode, change) }
        let result = try body()
        if inode.isRegularFile { events.changedData(inode, change) }
        return result
    }
}
