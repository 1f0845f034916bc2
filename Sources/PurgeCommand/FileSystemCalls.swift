import Glibc
import PurgeCore

/// The few path and descriptor calls the command makes, as throwing Swift.
/// (The command's own; the adapter has PurgeSys.)
enum FileSystemCalls {
    /// The canonical absolute path: symlinks, `.` and `..` resolved.
    /// Wraps `realpath(3)`.
    static func canonicalPath(_ path: String) throws(SystemError) -> String {
        guard let resolved = realpath(path, nil) else { throw .current }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// An absolute path without touching the named file: for a mountpoint
    /// whose daemon died, where `realpath` fails with `ENOTCONN`.
    static func absolutePath(_ path: String) -> String {
        var joined = path
        if !path.hasPrefix("/") {
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let cwd = getcwd(&buffer, buffer.count) != nil
                ? buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) } : "/"
            joined = cwd + "/" + path
        }
        return AbsolutePath.normalise(joined) ?? joined
    }

    /// Whether `path` is a directory (following symlinks). Wraps `stat(2)`.
    static func isDirectory(_ path: String) throws(SystemError) -> Bool {
        var status = stat()
        guard stat(path, &status) == 0 else { throw .current }
        return (status.st_mode & S_IFMT) == S_IFDIR
    }

    /// Whether anything exists at `path` (a dangling symlink counts). Wraps `lstat(2)`.
    static func exists(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0
    }

    /// Opens a file; retries `EINTR`. Wraps `open(2)` / `openat(2)`.
    static func open(_ path: String, flags: Int32, mode: mode_t = 0, relativeTo directory: Int32 = AT_FDCWD) throws(SystemError) -> Int32 {
        while true {
            let fd = openat(directory, path, flags | O_CLOEXEC, mode)
            if fd >= 0 { return fd }
            if errno != EINTR { throw .current }
        }
    }

    /// Writes every byte, looping over partial writes and `EINTR`. Wraps `write(2)`.
    static func writeAll(_ fd: Int32, _ text: String) throws(SystemError) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                throw .current
            }
            offset += written
        }
    }

    /// Reads until end of file, up to `limit` bytes. Wraps `read(2)`.
    static func readAll(_ fd: Int32, limit: Int = 1 << 22) throws(SystemError) -> [UInt8] {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while result.count < limit {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .current
            }
            if count == 0 { break }
            result.append(contentsOf: buffer[0..<count])
        }
        return result
    }

    /// Reads up to and without the first newline, or to end of file, up to
    /// `limit` bytes: one byte at a time, so nothing after the line is consumed.
    static func readLine(_ fd: Int32, limit: Int = 4096) throws(SystemError) -> [UInt8] {
        var result: [UInt8] = []
        var byte: UInt8 = 0
        while result.count < limit {
            let count = read(fd, &byte, 1)
            if count < 0 {
                if errno == EINTR { continue }
                throw .current
            }
            if count == 0 || byte == UInt8(ascii: "\n") { break }
            result.append(byte)
        }
        return result
    }

    /// A pipe whose two ends are close-on-exec, as `(read, write)`. Wraps
    /// `pipe(2)` and `fcntl(2)`: glibc's `pipe2` needs `_GNU_SOURCE`, and the
    /// command spawns from one thread only, so no child can slip in between.
    static func pipe() throws(SystemError) -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        guard Glibc.pipe(&fds) == 0 else { throw .current }
        for fd in fds where fcntl(fd, F_SETFD, FD_CLOEXEC) != 0 {
            let error = SystemError.current
            close(fds[0])
            close(fds[1])
            throw error
        }
        return (fds[0], fds[1])
    }

    /// Reads a whole file such as `/proc/self/mountinfo`.
    static func readFile(_ path: String) throws(SystemError) -> [UInt8] {
        let fd = try open(path, flags: O_RDONLY)
        defer { close(fd) }
        return try readAll(fd)
    }
}
