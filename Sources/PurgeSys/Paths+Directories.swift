import Glibc

/// Making and removing whole directories by path, for a command that sets up
/// a scratch tree of its own (`purgefs demo`).
extension Paths {
    /// Creates a new directory named after `template`, whose last six
    /// characters must be `XXXXXX`, with mode 0700, and returns its name.
    /// Wraps `mkdtemp(3)`.
    public static func makeTemporaryDirectory(_ template: String) throws(Errno) -> String {
        var bytes = Array(template.utf8CString)
        guard mkdtemp(&bytes) != nil else { throw Errno.current }
        return String(decoding: bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Creates one directory. Wraps `mkdir(2)`.
    public static func makeDirectory(_ path: String, mode: mode_t = 0o755) throws(Errno) {
        _ = try checked(path: path) { mkdir($0, mode) }
    }

    /// The names in the directory `path` (not `.` and `..`), in `readdir`
    /// order, without following a symlink at `path`. No descriptor is left
    /// open: a walk that lists each directory this way holds none while it
    /// goes deeper. Wraps `open(2)`, `fdopendir(3)`, `readdir(3)`.
    public static func names(in path: String) throws(Errno) -> [String] {
        let directory = try FileDescriptor.open(path: path, flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        defer { directory.closeQuietly() }
        let stream = try DirectoryStream(directory)
        var names: [String] = []
        while let entry = try stream.next() {
            if !entry.isDotOrDotDot { names.append(String(cString: entry.name)) }
        }
        return names
    }

    /// Removes `path` and everything below it, like `rm -rf --one-file-system`:
    /// symlinks are removed, never followed, and a directory on another
    /// filesystem (a mount point inside the tree, or `path` itself while
    /// something is mounted on it) stops the removal with `EBUSY` before
    /// anything below it is touched. Works with `*at()` calls on held
    /// directory descriptors; wraps `openat(2)`, `fstatat(2)`, `unlinkat(2)`.
    public static func removeTree(_ path: String) throws(Errno) {
        let trimmed = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
        let slash = trimmed.lastIndex(of: "/")
        let parentPath = slash.map { $0 == trimmed.startIndex ? "/" : String(trimmed[..<$0]) } ?? "."
        let name = slash.map { String(trimmed[trimmed.index(after: $0)...]) } ?? trimmed
        guard !name.isEmpty, name != ".", name != ".." else { throw Errno.invalidArgument }
        let parent = try FileDescriptor.open(path: parentPath, flags: O_RDONLY | O_DIRECTORY)
        defer { parent.closeQuietly() }
        try removeEntry(name, in: parent, device: try parent.status().st_dev)
    }

    /// Removes `name` in `directory`, which is on `device`.
    private static func removeEntry(_ name: String, in directory: FileDescriptor, device: dev_t) throws(Errno) {
        try withCName(name) { (cName) throws(Errno) in
            let status = try directory.status(of: cName)
            guard status.st_mode & S_IFMT == S_IFDIR else {
                try directory.unlink(cName)
                return
            }
            guard status.st_dev == device else { throw Errno.busy }
            let child = try FileDescriptor.open(cName, in: directory, flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
            defer { child.closeQuietly() }
            // The names first, then the removals: readdir and unlink on one
            // directory at once may skip entries.
            var names: [String] = []
            let stream = try DirectoryStream(child)
            while let entry = try stream.next() {
                if !entry.isDotOrDotDot { names.append(String(cString: entry.name)) }
            }
            for entry in names {
                try removeEntry(entry, in: child, device: device)
            }
            try directory.unlink(cName, directory: true)
        }
    }

    /// `name` as a C string for `body`, keeping `body`'s typed error.
    private static func withCName<T>(_ name: String, _ body: (CName) throws(Errno) -> T) throws(Errno) -> T {
        try name.withCString { cName in Result { () throws(Errno) in try body(cName) } }.get()
    }
}
