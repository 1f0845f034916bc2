import CLinux
import Glibc

extension FileDescriptor {
    /// Reads up to `buffer.count` bytes at `offset`; fewer only at end of file.
    /// Wraps `pread(2)`, looping over short reads.
    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(Errno) -> Int {
        var done = 0
        while done < buffer.count {
            let n = try retryingInterrupts {
                pread(rawValue, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// Writes all of `buffer` at `offset` (or at the end for `O_APPEND` files).
    /// Wraps `pwrite(2)`, looping over short writes; a failure after some bytes
    /// reports those bytes, as write(2) does.
    public func write(_ buffer: UnsafeRawBufferPointer, at offset: Int64) throws(Errno) -> Int {
        var done = 0
        while done < buffer.count {
            let n: Int
            do {
                n = try retryingInterrupts {
                    pwrite(rawValue, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
                }
            } catch {
                if done > 0 { return done }
                throw error
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// Sets the file's size. Wraps `ftruncate(2)`.
    public func truncate(to size: Int64) throws(Errno) {
        _ = try retryingInterrupts { ftruncate(rawValue, off_t(size)) }
    }

    /// Flushes data (and metadata unless `dataOnly`) to stable storage.
    /// Wraps `fsync(2)` / `fdatasync(2)`.
    public func sync(dataOnly: Bool = false) throws(Errno) {
        _ = try retryingInterrupts { dataOnly ? fdatasync(rawValue) : fsync(rawValue) }
    }

    /// Allocates, punches or zeroes a range. Wraps `fallocate(2)`.
    public func allocate(mode: Int32, offset: Int64, length: Int64) throws(Errno) {
        _ = try retryingInterrupts { clinux_fallocate(rawValue, mode, offset, length) }
    }

    /// Frees the blocks of `length` bytes from `offset`, which then read as
    /// zeros; the size stays. Wraps `fallocate(2)` with
    /// `FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE`.
    public func punchHole(offset: Int64, length: Int64) throws(Errno) {
        try allocate(mode: clinux_FALLOC_FL_PUNCH_HOLE | clinux_FALLOC_FL_KEEP_SIZE, offset: offset, length: length)
    }

    /// Moves the file offset; with `SEEK_DATA`/`SEEK_HOLE` finds data or holes.
    /// Wraps `lseek(2)`.
    public func seek(to offset: Int64, whence: Int32) throws(Errno) -> Int64 {
        Int64(try checked { lseek(rawValue, off_t(offset), whence) })
    }

    /// Copies a range between files inside the kernel. Wraps `copy_file_range(2)`.
    public func copyRange(
        from source: FileDescriptor, sourceOffset: Int64, offset: Int64, length: Int, flags: UInt32 = 0
    ) throws(Errno) -> Int {
        var inOffset = sourceOffset
        var outOffset = offset
        return try retryingInterrupts {
            clinux_copy_file_range(source.rawValue, &inOffset, rawValue, &outOffset, length, flags)
        }
    }
}
