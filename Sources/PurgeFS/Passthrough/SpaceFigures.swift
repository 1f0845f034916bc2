import PurgeCore

/// Where `statfs` takes the mount's size, free and available space: the
/// same `SpaceStatus` as the space attributes. The mount registers Space's
/// `MountSpaceFigures` (the ledger, a shared device's neighbours read first).
protocol SpaceFigures: Sendable {
    func spaceStatus() -> SpaceStatus
}
