import Glibc

/// Walks a directory tree below a held directory descriptor, depth first,
/// without following symlinks and without crossing into other filesystems
/// (a bind mount inside the tree is listed but not entered).
///
/// Each entry is `lstat`ed relative to its directory's descriptor, as `du`
/// does; `visit` decides whether a directory is entered.
public struct TreeWalk {
    /// One entry found by the walk.
    public struct Visit {
        /// Identity of the directory holding the entry.
        public let parent: stat
        public let name: CName
        public let status: stat
        /// Depth below the root (1 for the root's own entries).
        public let depth: Int
        /// The directory holding the entry, open during the visit only.
        public let directory: FileDescriptor
    }

    public let root: FileDescriptor

    public init(root: FileDescriptor) {
        self.root = root
    }

    /// Calls `visit` for every entry below the root (not `.`/`..`); returns
    /// true from `visit` to enter a directory. Errors reading one directory
    /// are reported to `failed` and the walk goes on.
    public func run(
        visit: (Visit) -> Bool,
        failed: (_ directory: stat, _ error: Errno) -> Void = { _, _ in }
    ) throws(Errno) {
        let rootStatus = try root.status()
        try walk(root, status: rootStatus, device: rootStatus.st_dev, depth: 1, visit: visit, failed: failed)
    }

    private func walk(
        _ directory: FileDescriptor, status directoryStatus: stat, device: dev_t, depth: Int,
        visit: (Visit) -> Bool, failed: (stat, Errno) -> Void
    ) throws(Errno) {
        let stream: DirectoryStream
        do { stream = try DirectoryStream(directory) } catch {
            failed(directoryStatus, error)
            return
        }
        let listing = stream.descriptor
        while true {
            let entry: DirectoryEntry?
            do { entry = try stream.next() } catch {
                failed(directoryStatus, error)
                return
            }
            guard let entry else { return }
            if entry.isDotOrDotDot { continue }
            let status: stat
            do { status = try listing.status(of: entry.name) } catch {
                continue  // removed since it was listed
            }
            let enter = visit(Visit(parent: directoryStatus, name: entry.name, status: status, depth: depth, directory: listing))
            guard enter, status.st_mode & S_IFMT == S_IFDIR, status.st_dev == device else { continue }
            let child: FileDescriptor
            do {
                child = try FileDescriptor.open(entry.name, in: listing, flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
            } catch {
                failed(status, error)
                continue
            }
            defer { child.closeQuietly() }
            try walk(child, status: status, device: device, depth: depth + 1, visit: visit, failed: failed)
        }
    }
}
