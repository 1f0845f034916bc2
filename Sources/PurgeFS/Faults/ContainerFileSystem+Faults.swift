import CFuse
import Glibc
import PurgeCore
import PurgeSys

/// The adapter's side of fault rules: the path a rule sees, the check's
/// slow path, and the short write.
extension ContainerFileSystem {
    /// `Operations.admit` once some rule is set.
    func admitFault(_ request: fuse_req_t?, _ call: FaultCallOperations, _ target: FaultTarget) -> FaultInjector.Admission {
        if case .attribute(_, let name) = target, PurgeAttribute.parse(String(cString: name)) != .foreign { return .proceed }
        return faults.admit(request, call) { faultPath(of: target) }
    }

    /// The target's path relative to the container, the root empty.
    func faultPath(of target: FaultTarget) -> String {
        switch target {
        case .node(let id), .attribute(let id, _):
            return faults.relativePath(of: inodes.inode(NodeID(id)))
        case .entry(let parent, let name):
            let directory = faults.relativePath(of: inodes.inode(NodeID(parent)))
            let leaf = String(cString: name)
            return directory.isEmpty ? leaf : directory + "/" + leaf
        case .file(let info):
            return faults.relativePath(of: OpenFile.from(info).inode)
        }
    }

    /// A short write: takes all of `data` from the kernel (a spliced pipe
    /// must be emptied), writes the first half of it (at least one byte)
    /// through `write`, as any write, and returns the count written.
    func writeShortened(
        _ file: OpenFile, _ data: UnsafeMutablePointer<fuse_bufvec>, at offset: off_t, _ firing: FaultFiring, _ call: FaultCall
    ) throws(Errno) -> Int {
        let total = fuse_buf_size(data)
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: max(total, 1), alignment: 16)
        defer { buffer.deallocate() }
        var whole = cfuse_bufvec_mem(buffer, total)
        let copied = fuse_buf_copy(&whole, data, fuse_buf_copy_flags(rawValue: 0))
        if copied < 0 { throw Errno(Int32(-copied)) }
        var part = cfuse_bufvec_mem(buffer, max(copied / 2, min(copied, 1)))
        let written = try write(file, &part, at: offset)
        faults.noteShortWrite(firing, call, wrote: written, of: copied)
        return written
    }
}
