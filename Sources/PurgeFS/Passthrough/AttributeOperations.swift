import CFuse
import Glibc
import PurgeCore
import PurgeSys

/// The entries of the operations table for extended attributes, statfs and access.
enum AttributeOperations {
    static func install(into ops: inout fuse_lowlevel_ops) {
        ops.getxattr = { request, id, name, size in
            Operations.replying(request, "getxattr", .init(.getxattr), .attribute(id, name!)) { fs throws(Errno) in
                try AttributeOperations.replyWithBuffer(request, size: size) { (buffer) throws(Errno) in
                    try fs.extendedAttribute(of: NodeID(id), name: name!, into: buffer)
                }
            }
        }
        ops.listxattr = { request, id, size in
            Operations.replying(request, "listxattr", .init(.listxattr), .node(id)) { fs throws(Errno) in
                try AttributeOperations.replyWithBuffer(request, size: size) { (buffer) throws(Errno) in
                    try fs.listExtendedAttributes(of: NodeID(id), into: buffer)
                }
            }
        }
        ops.setxattr = { request, id, name, value, size, flags in
            Operations.replying(request, "setxattr", .init(.setxattr), .attribute(id, name!)) { fs throws(Errno) in
                try fs.setExtendedAttribute(
                    of: NodeID(id), name: name!, value: UnsafeRawBufferPointer(start: value, count: size), flags: flags,
                    caller: fuse_req_ctx(request)!.pointee.uid)
                fuse_reply_err(request, 0)
            }
        }
        ops.removexattr = { request, id, name in
            Operations.replying(request, "removexattr", .init(.removexattr), .attribute(id, name!)) { fs throws(Errno) in
                try fs.removeExtendedAttribute(of: NodeID(id), name: name!)
                fuse_reply_err(request, 0)
            }
        }
        ops.statfs = { request, id in
            Operations.replying(request, "statfs", .init(.statfs), .node(id)) { fs throws(Errno) in
                var status = try fs.fileSystemStatus()
                fuse_reply_statfs(request, &status)
            }
        }
        ops.access = { request, id, mask in
            Operations.replying(request, "access", .init(.access), .node(id)) { fs throws(Errno) in
                try fs.checkAccess(NodeID(id), mask: mask, caller: CallerIdentity(request!))
                fuse_reply_err(request, 0)
            }
        }
    }

    /// The xattr reply convention: size 0 asks for the size (`fuse_reply_xattr`);
    /// otherwise the value, or `ERANGE` from the backing call if it does not fit.
    private static func replyWithBuffer(
        _ request: fuse_req_t?, size: Int, _ fill: (UnsafeMutableRawBufferPointer) throws(Errno) -> Int
    ) throws(Errno) {
        if size == 0 {
            let needed = try fill(UnsafeMutableRawBufferPointer(start: nil, count: 0))
            fuse_reply_xattr(request, needed)
            return
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 8)
        defer { buffer.deallocate() }
        let used = try fill(buffer)
        fuse_reply_buf(request, buffer.baseAddress!.assumingMemoryBound(to: CChar.self), used)
    }
}
