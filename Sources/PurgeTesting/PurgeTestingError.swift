/// Why a `SimulatedDevice` call failed: one line, as purgefs said it.
public struct PurgeTestingError: Error, Equatable, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
