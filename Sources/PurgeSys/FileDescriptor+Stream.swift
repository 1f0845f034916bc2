import Glibc

/// Sequential I/O at the descriptor's own offset, for pipes and files read
/// from their start (a child's stderr, the ready pipe, `/proc` files).
/// Positional I/O on backing files is in `FileDescriptor+IO.swift`.
extension FileDescriptor {
    /// Reads what is available, up to `buffer.count` bytes; 0 at end of file.
    /// Retries `EINTR`. Wraps `read(2)`.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        try retryingInterrupts { Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
    }

    /// Reads until end of file, or until `limit` bytes have come, so a
    /// runaway writer cannot make us hold unbounded memory. Wraps `read(2)`.
    public func readAll(limit: Int = 1 << 22) throws(Errno) -> [UInt8] {
        var result: [UInt8] = []
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 1)
        defer { chunk.deallocate() }
        while result.count < limit {
            let wanted = min(chunk.count, limit - result.count)
            let count = try read(into: UnsafeMutableRawBufferPointer(rebasing: chunk[..<wanted]))
            if count == 0 { break }
            result += chunk[..<count]
        }
        return result
    }

    /// Reads up to and without the first newline, or to end of file, up to
    /// `limit` bytes: one byte at a time, so nothing after the line is
    /// consumed (the writer may keep the pipe open). Wraps `read(2)`.
    public func readLine(limit: Int = 4096) throws(Errno) -> [UInt8] {
        var result: [UInt8] = []
        var byte: UInt8 = 0
        while result.count < limit {
            let count = try withUnsafeMutableBytes(of: &byte) { (bytes) throws(Errno) in try read(into: bytes) }
            if count == 0 || byte == UInt8(ascii: "\n") { break }
            result.append(byte)
        }
        return result
    }

    /// Writes every byte of `buffer`, looping over partial writes; retries
    /// `EINTR`. Wraps `write(2)`.
    public func writeAll(_ buffer: UnsafeRawBufferPointer) throws(Errno) {
        var done = 0
        while done < buffer.count {
            done += try retryingInterrupts { Glibc.write(rawValue, buffer.baseAddress! + done, buffer.count - done) }
        }
    }

    /// Writes `text` as UTF-8; see `writeAll(_:)`. Wraps `write(2)`.
    public func writeAll(_ text: String) throws(Errno) {
        var text = text
        // `withUTF8` rethrows untyped; carry the `Errno` out in a `Result`.
        try text.withUTF8 { bytes in
            Result { () throws(Errno) in try writeAll(UnsafeRawBufferPointer(bytes)) }
        }.get()
    }

    /// The whole content of the file at `path` (`/proc/self/mountinfo`, say),
    /// up to `limit` bytes. Wraps `open(2)` and `read(2)`.
    public static func readFile(_ path: String, limit: Int = 1 << 22) throws(Errno) -> [UInt8] {
        let file = try open(path: path, flags: O_RDONLY)
        defer { file.closeQuietly() }
        return try file.readAll(limit: limit)
    }
}
