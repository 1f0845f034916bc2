import PurgeCore
import PurgeSys

/// Where a path given to a command lies among the mounts: on a purgefs
/// mount (at its mount point, or inside it) or not.
public struct MountLocation: Equatable {
    /// The canonical path.
    public var path: String
    /// The purgefs mount `path` is on, or `nil` when it is on another filesystem.
    public var mount: MountTable.Entry?

    /// The path below the mount point: `""` at the mount point itself.
    var relative: String? { mount.flatMap { AbsolutePath.relative(path, to: $0.mountPoint) } }
    var isMountPoint: Bool { relative == "" }

    /// Looks `path` (canonical) up in `table`: it is on a purgefs mount when
    /// the mount it lives on (the deepest, topmost) is one.
    init(path: String, table: MountTable) {
        self.path = path
        let mount = table.mount(containing: path)
        self.mount = mount?.isPurgefs == true ? mount : nil
    }

    /// Resolves `argument` and looks it up in the live mount table; a path
    /// that cannot be resolved is a failure naming it.
    public static func find(_ argument: String) throws(CommandExit) -> MountLocation {
        let path: String
        do throws(Errno) {
            path = try Paths.canonical(argument)
        } catch {
            if error == .notConnected {
                throw .failure("\(argument): \(error) (a purgefs daemon that died? purgefs unmount it)")
            }
            throw .failure("\(argument): \(error)")
        }
        let table: MountTable
        do throws(Errno) {
            table = try MountTable.current()
        } catch {
            throw .failure("cannot read /proc/self/mountinfo: \(error)")
        }
        return MountLocation(path: path, table: table)
    }

    /// The purgefs mount point `argument` names; anything else is a failure
    /// saying what it is instead.
    public static func mountPoint(_ argument: String) throws(CommandExit) -> MountLocation {
        let location = try find(argument)
        try location.requireMountPoint()
        return location
    }

    /// Fails unless this is the mount point of a purgefs mount.
    public func requireMountPoint() throws(CommandExit) {
        guard let mount else { throw .failure("\(path) is not a purgefs mount") }
        guard isMountPoint else {
            throw .failure("\(path) is inside the purgefs mount at \(mount.mountPoint); give the mount point")
        }
    }

    /// Fails unless this path is on a purgefs mount.
    public func requireOnPurgefs() throws(CommandExit) {
        guard mount != nil else { throw .failure("\(path) is not inside a purgefs mount") }
    }
}
