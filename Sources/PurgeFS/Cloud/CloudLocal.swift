import Glibc
import PurgeCore
import PurgeSys

/// The container's side of the cloud tier, by descriptor from the root, one
/// component at a time and never following a symlink.
enum CloudLocal {
    /// Opens `path` (relative to the container) with `flags`.
    static func open(_ path: String, from root: FileDescriptor, flags: Int32) throws(Errno) -> FileDescriptor {
        let components = path.split(separator: "/").map(String.init)
        guard let last = components.last else { throw Errno.invalidArgument }
        let directory = try openDirectory(components.dropLast(), from: root, making: false)
        defer { directory.closeQuietly() }
        return try CloudDirectory.open(last, in: directory, flags: flags | O_NOFOLLOW)
    }

    /// Opens the directory at `components`, making missing ones when `making`.
    static func openDirectory(_ components: ArraySlice<String>, from root: FileDescriptor, making: Bool) throws(Errno) -> FileDescriptor {
        var current = try root.duplicate()
        for component in components {
            do {
                if making {
                    do { try CloudDirectory.makeDirectory(component, in: current) } catch where error == .exists {}
                }
                let next = try CloudDirectory.open(component, in: current, flags: OpenFlags.path | O_DIRECTORY | O_NOFOLLOW)
                current.closeQuietly()
                current = next
            } catch {
                current.closeQuietly()
                throw error
            }
        }
        return current
    }

    /// Every regular file in the zones, by path relative to the container.
    static func scan(zones: [String], from root: FileDescriptor) -> [String: stat] {
        var found: [String: stat] = [:]
        for zone in zones {
            guard let directory = try? openDirectory(zone.split(separator: "/").map(String.init)[...], from: root, making: false)
            else { continue }
            let listing = try? directory.reopen(flags: O_RDONLY | O_DIRECTORY)
            directory.closeQuietly()
            guard let listing else { continue }
            defer { listing.closeQuietly() }
            for (path, status) in (try? TreeWalk(root: listing).regularFiles()) ?? [] {
                found[zone + "/" + path] = status
            }
        }
        return found
    }

    /// Makes `path` an evicted placeholder of a remote file: its size, mode
    /// and modification time, and no data. Returns its status.
    static func makePlaceholder(_ path: String, like remote: stat, from root: FileDescriptor) throws(Errno) -> stat {
        let components = path.split(separator: "/").map(String.init)
        guard let last = components.last else { throw Errno.invalidArgument }
        let directory = try openDirectory(components.dropLast(), from: root, making: true)
        defer { directory.closeQuietly() }
        let file = try CloudDirectory.open(
            last, in: directory, flags: O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: remote.st_mode & 0o7777)
        defer { file.closeQuietly() }
        return try makePlaceholder(file, like: remote)
    }

    /// Makes the new, empty `file` (open for writing) a placeholder of a
    /// remote file: its size and modification time, no data, synced.
    static func makePlaceholder(_ file: FileDescriptor, like remote: stat) throws(Errno) -> stat {
        try file.truncate(to: Int64(remote.st_size))
        try file.setTimes(access: remote.st_mtim, modification: remote.st_mtim)
        try file.sync()
        return try file.status()
    }

    /// Makes `path` a hole again with the recorded size and modification
    /// time: what an evicted file is. Returns its status.
    static func restoreHole(_ path: String, like signature: CloudSignature, from root: FileDescriptor) throws(Errno) -> stat {
        let file = try open(path, from: root, flags: O_WRONLY)
        defer { file.closeQuietly() }
        try file.truncate(to: 0)
        try file.truncate(to: Int64(signature.size))
        let time = timespec(tv_sec: Int(signature.modified / 1_000_000_000), tv_nsec: Int(signature.modified % 1_000_000_000))
        try file.setTimes(access: time, modification: time)
        try file.sync()
        return try file.status()
    }
}
