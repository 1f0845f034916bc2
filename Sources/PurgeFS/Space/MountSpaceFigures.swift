import PurgeCore

/// `statfs`'s figures (`SpaceFigures`): the ledger's status, read after
/// the shared device's neighbours so that another member's write shows at once.
struct MountSpaceFigures: SpaceFigures {
    let state: ContainerState
    let device: SharedDevice?

    func spaceStatus() -> SpaceStatus {
        device?.readNeighbours(state)  // another member's write shows at once
        return state.status()
    }
}
