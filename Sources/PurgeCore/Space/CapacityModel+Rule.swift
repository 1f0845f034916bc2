/// The one rule for the device, whichever door changes it: mount options
/// (`MountOptions.validate`, then, for a real device, the mount command
/// against its size), `purgefs space`, and `setfattr` of `capacity` or
/// `external` on the root. Every door reads values with
/// `capacity(parsing:)` and `external(parsing:)` and checks the device it
/// would leave with `validate(deviceSize:)`, so all three accept and refuse
/// the same values for the same reasons (`ValueError` for a value,
/// `OptionError` for the device as a whole).
extension CapacityModel {
    /// Reads a `capacity`: a size, more than 0.
    public static func capacity(parsing text: String) throws(ValueError) -> UInt64 {
        let bytes = try ByteSize(parsing: text).bytes
        if bytes == 0 { throw .zero }
        return bytes
    }

    /// Reads an `external`: a size, 0 included.
    public static func external(parsing text: String) throws(ValueError) -> UInt64 {
        try ByteSize(parsing: text).bytes
    }

    /// Checks the device as a whole, in this order:
    /// 1. `external` must be less than the device's size (the simulated
    ///    capacity, or the real device's): else nothing is ever available;
    /// 2. `low` must not be above `high` once both are resolved against
    ///    that size: purging starts below low and stops at high.
    ///
    /// `deviceSize`: the real device's size when the model has no
    /// capacity; `nil` while it is not known (options read before the
    /// container is found), and then only what can be told is checked.
    public func validate(deviceSize: UInt64?) throws(OptionError) {
        let size = capacity ?? deviceSize
        if let size, external >= size {
            throw .externalNotBelowCapacity(external: ByteSize.format(external), capacity: ByteSize.format(size))
        }
        if let above = Self.lowExceedsHigh(low: low, high: high, capacity: size), above {
            throw .lowAboveHigh(low: low.displayText, high: high.displayText)
        }
    }

    /// Whether `low` exceeds `high`, or `nil` when that cannot be told yet
    /// (one is a percentage, the other bytes, and the size is unknown).
    public static func lowExceedsHigh(low: SpaceThreshold, high: SpaceThreshold, capacity: UInt64?) -> Bool? {
        switch (low, high) {
        case (.percent(let lowShare), .percent(let highShare)): return lowShare > highShare
        case (.bytes(let lowBytes), .bytes(let highBytes)): return lowBytes > highBytes
        default:
            guard let capacity else { return nil }
            return low.bytes(ofCapacity: capacity) > high.bytes(ofCapacity: capacity)
        }
    }
}
