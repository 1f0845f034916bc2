import PurgeCore

extension ContainerState {
    /// Takes the shared device's settings and what the other members use
    /// (`SharedDevice.refresh`), keeping this container's own figures.
    func adoptDevice(_ device: CapacityModel, neighbours: UInt64, neighbourPurgeable: UInt64) {
        withBooks { books in
            books.model.capacity = device.capacity
            books.model.external = device.external
            books.model.low = device.low
            books.model.high = device.high
            books.model.neighbours = neighbours
            books.model.neighbourPurgeable = neighbourPurgeable
        }
    }
}
