import Glibc

/// A pipe's capacity and what waits in it (the FIFO `purgefs explore` reads a command's stdout from).
extension FileDescriptor {
    /// Asks for a pipe's capacity to be `bytes` (the kernel may round it up,
    /// or refuse past `/proc/sys/fs/pipe-max-size`); returns the capacity it
    /// has. Wraps `fcntl(2)` `F_SETPIPE_SZ`, `F_GETPIPE_SZ`.
    public func setPipeCapacity(_ bytes: Int32) -> Int {
        _ = fcntl(rawValue, 1031 /* F_SETPIPE_SZ */, bytes)
        return Int(max(0, fcntl(rawValue, 1032 /* F_GETPIPE_SZ */)))
    }

    /// Bytes waiting to be read from a pipe. Wraps `ioctl(2)` `FIONREAD`.
    public var bytesWaiting: Int {
        var waiting: Int32 = 0
        return ioctl(rawValue, UInt(FIONREAD), &waiting) == 0 ? Int(waiting) : 0
    }
}
