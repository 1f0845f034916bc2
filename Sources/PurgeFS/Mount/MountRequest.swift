import PurgeCore

/// What the command asks the adapter to serve: one container at one mountpoint.
public struct MountRequest: Sendable {
    /// Absolute path of the container (the backing directory).
    public var container: String
    /// Absolute path of the mountpoint; equal to `container` for an in-place mount.
    public var mountpoint: String
    public var options: MountOptions

    public init(container: String, mountpoint: String, options: MountOptions) {
        self.container = container
        self.mountpoint = mountpoint
        self.options = options
    }
}

/// Why a mount could not be made; `description` is the one line shown to the user.
public struct MountError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
