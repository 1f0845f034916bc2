import Glibc
import PurgeCore
import PurgeSys

/// Everything checked and opened before mounting: a bad request fails here,
/// with one clear line, before anything is mounted.
struct MountPreparation {
    /// The container's root, opened before the mount can cover it.
    let root: FileDescriptor
    /// The state directory, opened likewise.
    let state: FileDescriptor
    /// This daemon's lock on it, held until the process ends (see `StateLock`).
    let lock: StateLock
    /// The daemon log in the state directory, for stderr once detached.
    let log: FileDescriptor
    let hidden: HiddenEntry?

    static let logName = "daemon.log"

    init(_ request: MountRequest) throws(MountError) {
        let container = request.container
        root = try Self.openDirectory(container, role: "container")
        let mountpoint = try Self.openDirectory(request.mountpoint, role: "mountpoint")
        mountpoint.closeQuietly()
        if let type = (try? MountTable.current())?.fuseMount(at: request.mountpoint)?.fileSystemType {
            throw MountError("mountpoint \(request.mountpoint) is busy: \(type) is mounted there")
        }

        let statePath = request.options.stateDirectory ?? container + "/" + MountOptions.defaultStateDirectoryName
        let stateParent = Self.parent(of: statePath)
        let stateName = Self.lastComponent(of: statePath)
        let parent = try Self.openDirectory(stateParent, role: "state directory's parent")
        defer { parent.closeQuietly() }
        // Made 0700, or kept from an earlier mount: the user's own, tightened
        // to 0700 if looser (its metrics, logs and pointers are nobody else's);
        // another user's, or a symbolic link, refuses the mount.
        do {
            state = try PrivateDirectory.open(stateName, in: parent, parentPath: stateParent, create: true, tightensWritable: true)
        } catch {
            throw MountError("state directory \(error)")
        }
        // Before anything in it is read or written: one daemon per state directory.
        lock = try StateLock.take(in: state, statePath: statePath, request: request)
        do {
            log = try FileDescriptor.open(Self.logName, in: state, flags: O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, mode: 0o600)
            let parentStatus = try parent.status()
            hidden = HiddenEntry(
                parent: EntryID(device: UInt64(parentStatus.st_dev), inode: UInt64(parentStatus.st_ino)),
                name: Array(stateName.utf8CString))
        } catch {
            throw MountError("cannot open state directory \(statePath): \(error)")
        }
        StatePointer.record(statePath, root: root, state: state, request: request)
    }

    private static func openDirectory(_ path: String, role: String) throws(MountError) -> FileDescriptor {
        do {
            return try FileDescriptor.open(path: path, flags: OpenFlags.path | O_DIRECTORY)
        } catch where error == .noEntry {
            throw MountError("\(role) \(path) does not exist")
        } catch where error == .notDirectory {
            throw MountError("\(role) \(path) is not a directory")
        } catch {
            throw MountError("cannot open \(role) \(path): \(error)")
        }
    }

    private static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    private static func lastComponent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }
}
