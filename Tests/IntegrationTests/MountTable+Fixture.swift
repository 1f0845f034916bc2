import PurgeCore
import PurgeSys

/// The questions the fixtures ask of the live mount table; an unreadable
/// table counts as empty.
extension MountTable {
    private static var live: [Entry] { (try? current())?.entries ?? [] }

    /// Every mount stacked on `path`, bottom first.
    static func mounts(at path: String) -> [Entry] {
        live.filter { $0.mountPoint == path }
    }

    static func isMounted(_ path: String) -> Bool { !mounts(at: path).isEmpty }

    /// Mounts at `path` or below it.
    static func mounts(under path: String) -> [Entry] {
        live.filter { $0.mountPoint == path || $0.mountPoint.hasPrefix(path + "/") }
    }
}
