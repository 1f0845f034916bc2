import Glibc

/// Path calls `purgefs explore` makes on directories of its own (the work
/// directory, the crash states it builds): none of them is on a mount.
extension Paths {
    /// A hard link `newPath` to the file at `existing`. Wraps `link(2)`.
    public static func link(_ existing: String, as newPath: String) throws(Errno) {
        _ = try checked(path: existing) { source in newPath.withCString { Glibc.link(source, $0) } }
    }

    /// A symbolic link at `path` to `target`. Wraps `symlink(2)`.
    public static func makeSymbolicLink(_ path: String, target: [UInt8]) throws(Errno) {
        let text = String(decoding: target, as: UTF8.self)
        _ = try checked(path: path) { link in text.withCString { symlink($0, link) } }
    }

    /// The target of the symbolic link at `path`. Wraps `readlink(2)`.
    public static func symbolicLinkTarget(_ path: String) throws(Errno) -> [UInt8] {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = try checked(path: path) { readlink($0, &buffer, buffer.count - 1) }
        return buffer[..<count].map { UInt8(bitPattern: $0) }
    }

    /// Sets the mode of what `path` names (following a symlink). Wraps `chmod(2)`.
    public static func changeMode(_ path: String, _ mode: mode_t) throws(Errno) {
        _ = try checked(path: path) { chmod($0, mode) }
    }

    /// A FIFO at `path`. Wraps `mkfifo(3)`.
    public static func makeFIFO(_ path: String, mode: mode_t) throws(Errno) {
        _ = try checked(path: path) { mkfifo($0, mode) }
    }

    /// Whether the caller may execute `path`. Wraps `access(2)` with `X_OK`.
    public static func isExecutable(_ path: String) -> Bool {
        access(path, X_OK) == 0
    }
}
