import Glibc
import PurgeCore
import PurgeSys

/// Making a linked clone: `destination`, empty and just made by its opener
/// (as `cp` makes it), becomes one more name of `source`'s backing inode,
/// and its own empty inode becomes its anchor.
///
/// Order, so that `kill -9` at any point leaves every name reading its own
/// content: the registry is saved first; then the empty inode gets its anchor
/// name; then a temporary name (`.purgefs-clone.*`, removed at mount) links
/// the source's data beside the destination and is renamed over it. Until
/// that rename the destination is its empty self (the next mount forgets the
/// member); after it, a clone.
extension LinkedClones {
    /// Returns false when this is no case for a linked clone: the caller copies.
    func makeClone(of source: OpenFile, into destination: OpenFile, making fs: CloneMaking) -> Bool {
        guard makesClones, source.inode.isRegularFile, destination.inode.isRegularFile,
              let name = createdNames.name(of: destination.inode.key) ?? Self.onlyName(of: destination.inode, making: fs)
        else { return false }
        // A file the kernel reads from its backing file is never a clone's
        // destination (its backing file becomes the anchor): copied instead.
        guard fs.kernelPassthrough.withhold(destination.inode.id) else { return false }
        defer { fs.kernelPassthrough.endWithholding(destination.inode.id) }
        do {
            return try withDataLocks(of: [source.inode, destination.inode]) { () throws(Errno) -> Bool in
                // Sparse since the copy policy asked (a writer's first write
                // made it so): its writes wait for the data lock held here
                // inside their modification bracket, for which `share` would
                // wait forever. Copied instead, as any sparse member is.
                guard !sparse.has(source.inode.key), !sparse.has(destination.inode.key) else { return false }
                return try fs.locks.withLocks(name.parent) { () throws(Errno) -> Bool in
                    try link(source, into: destination, as: name, making: fs)
                }
            }
        } catch {
            Diagnostics.note("cannot make a linked clone (copying instead): \(error)")
            return false
        }
    }

    private func link(
        _ source: OpenFile, into destination: OpenFile, as name: LinkedCloneRegistry.Name, making fs: CloneMaking
    ) throws(Errno) -> Bool {
        guard let anchors,
              let chain = state.read({ _, names in names.components(of: name.parent) })
        else { return false }
        let directory = try DirectoryNames.open(chain, from: fs.root)
        defer { directory.closeQuietly() }
        let anchorID = destination.inode.key
        let data = try source.inode.withDescriptor { (path) throws(Errno) in try path.reopen(flags: OpenFlags.path) }
        defer { data.closeQuietly() }
        let dataStatus = try data.status()
        let backing = EntryID(dataStatus)
        // What is linked must be what the caller's open file reads (and
        // measured): a node re-pointed since that open names other data.
        guard let opened = try? source.descriptor.status(), EntryID(opened) == backing, opened.st_size == dataStatus.st_size else {
            Diagnostics.note("not a linked clone (copying instead): the source's node names other data than its open file reads")
            return false
        }
        // The destination is still the empty file its opener made, under its name.
        let found = try directory.status(of: Self.cName(name.name))
        guard EntryID(found) == anchorID, destination.inode.backing == anchorID, found.st_size == 0, found.st_nlink == 1,
              dataStatus.st_mode & S_IFMT == S_IFREG, dataStatus.st_size > 0, dataStatus.st_dev == found.st_dev,
              // A destination in a group already (its data another's) is not made a clone again.
              guarded.withLock({ table in table.registry.members[anchorID] == nil && table.registry.group(backedBy: anchorID) == nil
                  && table.registry.groups.values.allSatisfy { $0.retiring != backing } })
        else { return false }

        // No writer of the source keeps a writable descriptor from now on
        // (one that just closed may still be open here: its release comes later).
        // A failure from here on undoes every step, writers' descriptors included.
        let sourceWasShared = source.inode.sharing.isShared
        let writers = source.inode.sharing.share()
        var registered = false
        let anchorName = LinkedCloneRegistry.anchorName(of: anchorID)
        let temporary = CloneLeftovers.prefix + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        do throws(Errno) {
            // A writer the kernel serves with the source's backing file could map it: copied instead.
            if fs.kernelPassthrough.hasWriter(source.inode.id) { throw Errno.busy }
            for writer in writers {
                writer.repoint(to: try data.reopen(flags: O_RDONLY), protecting: true)
            }
            let handle = try FileHandle(of: data)
            guarded.withLock { table in
                table.registry.add(anchor: anchorID, named: name, backing: backing, handle: handle.stored)
                save(&table)
            }
            registered = true
            DebugSteps.reached("clone-registered")
            try destination.inode.withDescriptor { (path) throws(Errno) in try path.link(as: anchorName, in: anchors) }
            DebugSteps.reached("clone-anchored")
            try data.link(as: temporary, in: directory)
            DebugSteps.reached("clone-linked")
            try directory.rename(temporary, to: Self.cName(name.name), in: directory)
            DebugSteps.reached("clone-renamed")
        } catch {
            try? directory.unlink(temporary)
            if (try? anchors.status(of: anchorName)).map(EntryID.init) == anchorID { try? anchors.unlink(anchorName) }
            if registered {
                guarded.withLock { table in
                    table.registry.remove(anchorID)
                    save(&table)
                }
            }
            if !sourceWasShared {
                source.inode.sharing.unshare()
                for writer in writers { try? writer.unprotect() }
            }
            throw error
        }

        // The destination now reads the shared data, read-only; its own inode
        // (the anchor) stays held while the node lives.
        if let own = try? destination.inode.withDescriptor({ (path) throws(Errno) in try path.reopen(flags: OpenFlags.path) }) {
            destination.inode.sharing.holdIdentity(own)
        }
        destination.inode.repoint(to: try data.reopen(flags: OpenFlags.path), backing: backing)
        _ = destination.inode.sharing.share()
        for file in destination.inode.sharing.openFiles {
            if let readOnly = try? data.reopen(flags: O_RDONLY) { file.repoint(to: readOnly, protecting: true) }
        }
        knowNode(destination.inode)
        guarded.withLock { table in
            guard let group = table.registry.group(backedBy: backing) else { return }
            settle(group, in: &table)
        }
        return true
    }

    /// The one name of a file that its opener did not make (`cp` onto an
    /// existing file opens it with `O_TRUNC`): found in the directory the
    /// ledger has it in, by inode number. Nil for a file with other names.
    private static func onlyName(of inode: Inode, making fs: CloneMaking) -> LinkedCloneRegistry.Name? {
        guard let status = inode.withDescriptorQuietly({ try? $0.status() }) ?? nil, status.st_nlink == 1,
              let parents = fs.state.read({ ledger, _ in try? ledger.linkDirectories(of: inode.key) }), parents.count == 1,
              let chain = fs.state.read({ _, names in names.components(of: parents[0]) }),
              let directory = try? DirectoryNames.open(chain, from: fs.root)
        else { return nil }
        defer { directory.closeQuietly() }
        guard let stream = try? DirectoryStream(directory) else { return nil }
        while let entry = try? stream.next() {
            guard entry.inode == UInt64(status.st_ino), !entry.isDotOrDotDot else { continue }
            return LinkedCloneRegistry.Name(parent: parents[0], name: bytes(entry.name))
        }
        return nil
    }

    /// A stored name as a C string.
    static func cName(_ bytes: [UInt8]) -> [CChar] {
        bytes.map { CChar(bitPattern: $0) } + [0]
    }
}
