import Glibc
import PurgeCore

/// Calls on paths the command is given: the adapter works on held
/// descriptors with `*at()` calls, but a command line names paths.
public enum Paths {
    /// The canonical absolute path: symlinks, `.` and `..` resolved.
    /// Wraps `realpath(3)`.
    public static func canonical(_ path: String) throws(Errno) -> String {
        guard let resolved = realpath(path, nil) else { throw Errno.current }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// The canonical path of `path`, which need not exist yet: its nearest
    /// existing ancestor resolved (`canonical`), the missing rest appended
    /// and normalised. For comparing a directory that will be made with
    /// one that exists.
    public static func canonicalAllowingMissing(_ path: String) -> String {
        if let resolved = try? canonical(path) { return resolved }
        guard path != "/", let slash = path.lastIndex(of: "/") else { return path }
        let parent = slash == path.startIndex ? "/" : String(path[..<slash])
        let base = canonicalAllowingMissing(parent)
        return AbsolutePath.normalise(base + "/" + path[path.index(after: slash)...]) ?? path
    }

    /// The working directory. Wraps `getcwd(3)`.
    public static func workingDirectory() throws(Errno) -> String {
        guard let directory = getcwd(nil, 0) else { throw Errno.current }
        defer { free(directory) }
        return String(cString: directory)
    }

    /// Whether `path` is a directory, following symlinks. Wraps `stat(2)`.
    public static func isDirectory(_ path: String) throws(Errno) -> Bool {
        var status = stat()
        _ = try checked(path: path) { stat($0, &status) }
        return status.st_mode & S_IFMT == S_IFDIR
    }

    /// The attributes of what `path` names, not following a symlink there.
    /// Wraps `lstat(2)`.
    public static func linkStatus(_ path: String) throws(Errno) -> stat {
        var status = stat()
        _ = try checked(path: path) { lstat($0, &status) }
        return status
    }

    /// Removes the file (not a directory) at `path`. Wraps `unlink(2)`.
    public static func removeFile(_ path: String) throws(Errno) {
        _ = try checked(path: path) { unlink($0) }
    }

    /// The first executable file named `name` in the directories of
    /// `search` (a `PATH`-style list), nil when there is none. Wraps `access(2)` with `X_OK`.
    public static func executable(named name: String, in search: String) -> String? {
        for directory in search.split(separator: ":") where !directory.isEmpty {
            let candidate = directory + "/" + name
            if access(candidate, X_OK) == 0, (try? isDirectory(candidate)) == false { return candidate }
        }
        return nil
    }

    /// Whether anything exists at `path` (a dangling symlink counts).
    /// Wraps `lstat(2)`.
    public static func exists(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0
    }

    /// Unmounts the filesystem mounted at `path` (needs `CAP_SYS_ADMIN`; a
    /// user unmounts a FUSE mount with `fusermount3 -u`). Wraps `umount2(2)`.
    public static func unmount(_ path: String) throws(Errno) {
        _ = try checked(path: path) { umount2($0, 0) }
    }
}

extension Paths {
    /// Detaches the filesystem mounted at `path` now and cleans it up once
    /// nothing uses it any more: for a mount that must go although a process
    /// still has a file open in it (needs `CAP_SYS_ADMIN`).
    /// Wraps `umount2(2)` with `MNT_DETACH`.
    public static func detach(_ path: String) throws(Errno) {
        _ = try checked(path: path) { umount2($0, Int32(MNT_DETACH)) }
    }
}
