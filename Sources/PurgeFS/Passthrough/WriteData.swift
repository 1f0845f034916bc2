import CFuse
import PurgeSys

/// A write request's data, which may still be in the kernel's pipe
/// (`FUSE_BUF_IS_FD`), copied into memory for code that needs its bytes.
enum WriteData {
    /// Runs `body` with the request's bytes (a buffer and how many were copied).
    static func copied<T>(
        _ data: UnsafeMutablePointer<fuse_bufvec>, _ body: (UnsafeMutableRawPointer, Int) throws(Errno) -> T
    ) throws(Errno) -> T {
        let total = fuse_buf_size(data)
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: max(total, 1), alignment: 16)
        defer { buffer.deallocate() }
        var whole = cfuse_bufvec_mem(buffer, total)
        let copied = fuse_buf_copy(&whole, data, fuse_buf_copy_flags(rawValue: 0))
        if copied < 0 { throw Errno(Int32(-copied)) }
        return try body(buffer, copied)
    }
}
