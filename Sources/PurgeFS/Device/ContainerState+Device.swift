import PurgeCore

extension ContainerState {
    /// Takes the shared device's settings and what the other members use
    /// (`SharedDevice.refresh`), keeping this container's own figures.
    func adoptDevice(_ device: CapacityModel, neighbours: UInt64, neighbourPurgeable: UInt64) {
        lock.withLock {
            model.capacity = device.capacity
            model.external = device.external
            model.low = device.low
            model.high = device.high
            model.neighbours = neighbours
            model.neighbourPurgeable = neighbourPurgeable
        }
    }
}
