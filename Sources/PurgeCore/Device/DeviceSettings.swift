/// What every container of a shared device shares: one capacity, one
/// external figure, one pair of marks, one policy. Kept in the device
/// directory (`settings`), replaced whole and atomically by whichever member
/// changes it; every member reads it on each round of its monitor.
public struct DeviceSettings: Equatable, Sendable {
    /// `nil`: the backing filesystem is the device (then every member must be on it).
    public var capacity: UInt64?
    public var external: UInt64
    public var low: SpaceThreshold
    public var high: SpaceThreshold
    public var policy: DevicePolicy
    /// The backing filesystem's device number (`st_dev`) of the first member:
    /// a real device is that filesystem.
    public var backing: UInt64
    /// Bumped by each change, so members see that it changed.
    public var generation: UInt64 = 1

    public init(capacity: UInt64?, external: UInt64, low: SpaceThreshold, high: SpaceThreshold,
                policy: DevicePolicy, backing: UInt64, generation: UInt64 = 1) {
        self.capacity = capacity
        self.external = external
        self.low = low
        self.high = high
        self.policy = policy
        self.backing = backing
        self.generation = generation
    }

    /// The device a first member's options make.
    public init(options: MountOptions, backing: UInt64) {
        self.init(capacity: options.capacity, external: options.external, low: options.low, high: options.high,
                  policy: options.devicePolicy ?? .quota, backing: backing)
    }

    public var model: CapacityModel { CapacityModel(capacity: capacity, external: external, low: low, high: high) }

    /// Why a later member's options cannot join this device, or `nil` when
    /// they agree: each option it gave must say what the device says
    /// (options it left out take the device's). `backing` is the joining
    /// container's filesystem: a real device is one filesystem, so a member
    /// elsewhere would see another device's free space. A simulated device
    /// is a number, so its members may live anywhere.
    public func disagreement(with options: MountOptions, backing other: UInt64, name: String) -> String? {
        func differs(_ field: PartialKeyPath<MountOptions>, _ mine: String, _ theirs: String) -> String {
            let option = MountOptionCatalog.name(of: field)
            return "device \(name) has \(option)=\(mine), this mount says \(option)=\(theirs): "
                + "leave the option out to take the device's, or change the device with purgefs space"
        }
        if options.isGiven(\.capacity), options.capacity != capacity {
            return differs(\.capacity, capacity.map(ByteSize.format) ?? "(the real device)",
                           options.capacity.map(ByteSize.format) ?? "")
        }
        if options.isGiven(\.external), options.external != external {
            return differs(\.external, ByteSize.format(external), ByteSize.format(options.external))
        }
        if options.isGiven(\.low), options.low != low { return differs(\.low, low.displayText, options.low.displayText) }
        if options.isGiven(\.high), options.high != high { return differs(\.high, high.displayText, options.high.displayText) }
        if let policy = options.devicePolicy, policy != self.policy {
            return differs(\.devicePolicy, self.policy.rawValue, policy.rawValue)
        }
        if capacity == nil && other != backing {
            return "device \(name) is the real filesystem of its first container, and this container is on "
                + "another filesystem: give the device a capacity= to share it across filesystems"
        }
        return nil
    }

    /// Checks a change of capacity or external: the rule of a single device
    /// (`CapacityModel.validate`), and room for what no purge can free: the
    /// members' usage outside their caches (`unpurgeable`, summed) must
    /// leave some space, else every member is full at once.
    public func validateChange(deviceSize: UInt64?, unpurgeable: UInt64) throws(OptionError) {
        try model.validate(deviceSize: deviceSize)
        let size = capacity ?? deviceSize
        if let size, capacity != nil, external.addingClamped(unpurgeable) >= size {
            throw .noSpaceLeft(capacity: ByteSize.format(size), external: ByteSize.format(external),
                               used: ByteSize.format(unpurgeable))
        }
    }

    // MARK: the file

    public static let fileName = "settings"

    /// One `name value` line each.
    public var encoded: [UInt8] {
        var text = "generation \(generation)\n"
        if let capacity { text += "capacity \(capacity)\n" }
        text += "external \(external)\nlow \(low.encoded)\nhigh \(high.encoded)\npolicy \(policy.rawValue)\nbacking \(backing)\n"
        return Array(text.utf8)
    }

    public init?(decoding data: [UInt8]) {
        guard let settings = try? DeviceSettings(reading: data) else { return nil }
        self = settings
    }

    /// The largest generation read back: a change adds one, which cannot overflow then.
    public static let generationLimit: UInt64 = 1 << 62

    /// Reads the file as hostile input (`DeviceRecordLines`): sizes at most
    /// `DeviceRecordLines.maximumBytes`, a known policy, marks as the
    /// options accept them.
    public init(reading data: [UInt8]) throws(DeviceRecordError) {
        let lines = try DeviceRecordLines(data)
        func threshold(_ name: String) throws(DeviceRecordError) -> SpaceThreshold {
            let text = try lines.text(name)
            guard let value = SpaceThreshold(encoded: text) else { throw DeviceRecordError("\(name) \(text.prefix(40)) is not a mark") }
            return value
        }
        let policyName = try lines.text("policy")
        guard let policy = DevicePolicy(rawValue: policyName) else { throw DeviceRecordError("policy \(policyName.prefix(40)) is unknown") }
        self.init(capacity: try lines.optionalBytes("capacity"), external: try lines.bytes("external"),
                  low: try threshold("low"), high: try threshold("high"), policy: policy,
                  backing: try lines.number("backing"),
                  generation: try lines.number("generation", maximum: Self.generationLimit))
    }
}

extension SpaceThreshold {
    /// `b:BYTES` or `p:PERCENT`, for the device's files.
    var encoded: String {
        switch self {
        case .bytes(let value): return "b:\(value)"
        case .percent(let share): return "p:\(share)"
        }
    }

    init?(encoded text: String) {
        if text.hasPrefix("b:"), let value = try? DeviceRecordLines.number(text.dropFirst(2), maximum: DeviceRecordLines.maximumBytes, what: "") {
            self = .bytes(value)
            return
        }
        if text.hasPrefix("p:"), let share = Double(text.dropFirst(2)), share.isFinite, share > 0, share <= 100 { self = .percent(share); return }
        return nil
    }
}
