import CFuse
import Glibc
import PurgeCore
import PurgeSys

/// The entries of the operations table for directories. A directory handle
/// is a retained `DirectoryHandle`, released in releasedir: the kernel
/// brackets every use of it between opendir and releasedir.
enum DirectoryOperations {
    static func install(into ops: inout fuse_lowlevel_ops) {
        ops.opendir = { request, id, info in
            Operations.replying(request, "opendir", .init(.opendir), .node(id)) { fs throws(Errno) in
                let directory = try fs.openDirectory(NodeID(id))
                let pointer = Unmanaged.passRetained(directory).toOpaque()
                info!.pointee.fh = UInt64(UInt(bitPattern: pointer))
                if fuse_reply_open(request, info) != 0 { Unmanaged<DirectoryHandle>.fromOpaque(pointer).release() }
            }
        }
        ops.readdir = { request, id, size, offset, info in
            DirectoryOperations.read(request, id, size: size, offset: offset, info: info!, plus: false)
        }
        ops.readdirplus = { request, id, size, offset, info in
            DirectoryOperations.read(request, id, size: size, offset: offset, info: info!, plus: true)
        }
        ops.releasedir = { request, _, info in
            Operations.watching(request, "releasedir") { _ in
                Unmanaged<DirectoryHandle>.fromOpaque(DirectoryOperations.pointer(info!)).release()
                fuse_reply_err(request, 0)
            }
        }
        ops.fsyncdir = { request, id, dataOnly, info in
            Operations.replying(request, "fsyncdir", .init(.fsyncdir), .node(id)) { fs throws(Errno) in
                try fs.syncDirectory(DirectoryOperations.handle(info!), dataOnly: dataOnly != 0)
                fuse_reply_err(request, 0)
            }
        }
    }

    private static func read(
        _ request: fuse_req_t?, _ id: fuse_ino_t, size: Int, offset: off_t, info: UnsafeMutablePointer<fuse_file_info>, plus: Bool
    ) {
        Operations.replying(request, plus ? "readdirplus" : "readdir", .init(.readdir), .node(id)) { fs throws(Errno) in
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 8)
            defer { buffer.deallocate() }
            let used = try fs.readDirectory(DirectoryOperations.handle(info), request: request!, offset: Int64(offset), plus: plus, into: buffer)
            fuse_reply_buf(request, buffer.baseAddress!.assumingMemoryBound(to: CChar.self), used)
        }
    }

    private static func pointer(_ info: UnsafeMutablePointer<fuse_file_info>) -> UnsafeMutableRawPointer {
        UnsafeMutableRawPointer(bitPattern: UInt(info.pointee.fh))!
    }

    private static func handle(_ info: UnsafeMutablePointer<fuse_file_info>) -> DirectoryHandle {
        Unmanaged<DirectoryHandle>.fromOpaque(pointer(info)).takeUnretainedValue()
    }
}
