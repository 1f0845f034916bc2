import PurgeCore

/// Mounts a container and serves it until it is unmounted.
public enum FileSystemServer {
    /// Checks the request, mounts, calls `whenReady` once the kernel's INIT
    /// has been answered (the mount is usable), and serves until unmounted.
    /// Throws `MountError` for anything that prevents mounting.
    public static func serve(_ request: MountRequest, whenReady: @escaping @Sendable () -> Void) throws(MountError) {
        throw MountError("purgefs: the filesystem adapter is not built yet")
    }
}
