import CFuse
import Glibc
import PurgeCore
import PurgeSys

/// Directory listing: readdir and readdirplus.
extension ContainerFileSystem {
    func openDirectory(_ id: NodeID) throws(Errno) -> DirectoryHandle {
        try DirectoryHandle(inodes.inode(id))
    }

    /// Fills `buffer` with entries from `offset` on, as many as fit. With
    /// `plus`, each entry but `.` and `..` is looked up (and counted); an entry
    /// that does not fit is un-counted again and read anew next time.
    func readDirectory(
        _ handle: DirectoryHandle, request: fuse_req_t, offset: Int64, plus: Bool,
        into buffer: UnsafeMutableRawBufferPointer
    ) throws(Errno) -> Int {
        let base = buffer.baseAddress!.assumingMemoryBound(to: CChar.self)
        return try handle.withStream { (stream) throws(Errno) -> Int in
            stream.seek(to: offset)
            var used = 0
            while let item = try stream.next() {
                if isHidden(item.name, in: handle.directory) { continue }
                let remaining = buffer.count - used
                let size: Int
                // A linked clone is listed as its anchor, the identity `stat` gives it.
                let backing = EntryID(device: handle.directory.key.device, inode: item.inode)
                let id = item.isDotOrDotDot ? backing : identities.identity(ofListed: backing, parent: handle.directory.key, name: item.name)
                if plus {
                    var entry = fuse_entry_param()
                    // `.`, `..`, and entries whose inode the kernel holds already
                    // (from a create or an earlier lookup): no attributes, no
                    // count; the kernel keeps what it has, or looks the name up.
                    let known = inodes.node(for: id) != nil
                    if item.isDotOrDotDot || known {
                        entry.attr.st_ino = ino_t(id.inode)
                        entry.attr.st_mode = mode_t(item.type) << 12
                    } else {
                        do { entry = try lookUp(item.name, in: handle.directory) } catch {
                            continue  // gone since it was listed
                        }
                    }
                    size = fuse_add_direntry_plus(request, base + used, remaining, item.name, &entry, off_t(item.nextOffset))
                    if size > remaining, entry.ino != 0 {
                        forget(NodeID(entry.ino), count: 1)
                    }
                } else {
                    var status = stat()
                    status.st_ino = ino_t(id.inode)
                    status.st_mode = mode_t(item.type) << 12
                    size = fuse_add_direntry(request, base + used, remaining, item.name, &status, off_t(item.nextOffset))
                }
                if size > remaining { break }
                used += size
            }
            return used
        }
    }

    func syncDirectory(_ handle: DirectoryHandle, dataOnly: Bool) throws(Errno) {
        try handle.withStream { (stream) throws(Errno) in try stream.descriptor.sync(dataOnly: dataOnly) }
        events.directorySynced(handle.directory.key)
    }
}
