extension MountOptions {
    /// Checks that hold between options, whatever the container.
    /// Called by `parse`; call again after changing fields by hand.
    public func validate() throws(OptionError) {
        // The device's own rule, shared with `purgefs space` and setfattr on the root.
        try CapacityModel(options: self).validate(deviceSize: nil)
        for purgeable in purgeableZones {
            for ubiquitous in ubiquitousZones
            where RelativePath.isSameOrInside(purgeable, ubiquitous) || RelativePath.isSameOrInside(ubiquitous, purgeable) {
                throw .zonesOverlap(purgeable: purgeable, ubiquitous: ubiquitous)
            }
        }
        if stateDirectory == nil {
            let state = Self.defaultStateDirectoryName
            for (option, zones) in zoneLists {
                for zone in zones where RelativePath.isSameOrInside(zone, state) {
                    throw .coversStateDirectory(option: option, path: zone)
                }
            }
        }
        if device == nil {
            if devicePolicy != nil { throw .needsDevice(option: MountOptionCatalog.name(of: \.devicePolicy)) }
            if cacheQuota != nil { throw .needsDevice(option: MountOptionCatalog.name(of: \.cacheQuota)) }
        }
        if fuseOptions.contains("allow_other") && fuseOptions.contains("allow_root") {
            throw .conflictingOptions("allow_other", "allow_root")
        }
    }

    /// The purgeable and the ubiquitous zones, each with its option's name.
    private var zoneLists: [(option: String, zones: [String])] {
        [(MountOptionCatalog.name(of: \.purgeableZones), purgeableZones),
         (MountOptionCatalog.name(of: \.ubiquitousZones), ubiquitousZones)]
    }

    /// Whether `low` exceeds `high`, or `nil` when that cannot be told yet
    /// (one is a percentage, the other bytes, and the device is the real
    /// one, whose size is known only once mounted).
    public func lowExceedsHigh() -> Bool? {
        CapacityModel.lowExceedsHigh(low: low, high: high, capacity: capacity)
    }

    /// Checks that need the container's absolute, canonical path (and `cloud`
    /// and `state` canonical too, for the comparison to hold: the command
    /// resolves them first): the state directory and the remote store must
    /// not sit where purgefs would serve, purge or upload them, and the store
    /// must hold neither the container nor the state directory.
    public func validate(containerPath: String) throws(OptionError) {
        guard let container = AbsolutePath.normalise(containerPath) else {
            preconditionFailure("validate(containerPath:) needs an absolute path, got \(containerPath)")
        }
        if let state = stateDirectory, let inside = AbsolutePath.relative(state, to: container) {
            if inside.isEmpty { throw .stateDirectoryIsContainer(state) }
            for (option, zones) in zoneLists {
                for zone in zones where RelativePath.isSameOrInside(inside, zone) || RelativePath.isSameOrInside(zone, inside) {
                    throw .coversStateDirectory(option: option, path: zone)
                }
            }
        }
        if case .directory(let given)? = cloud, let store = AbsolutePath.normalise(given) {
            if Self.overlap(store, container) { throw .cloudOverlapsContainer(given, container: container) }
            let state = AbsolutePath.normalise(stateDirectoryPath(containerPath: container)) ?? container
            if Self.overlap(store, state) { throw .cloudOverlapsStateDirectory(given, state: state) }
        }
    }

    /// Whether one of two normalised paths is the other or inside it.
    static func overlap(_ one: String, _ other: String) -> Bool {
        AbsolutePath.relative(one, to: other) != nil || AbsolutePath.relative(other, to: one) != nil
    }

    /// The state directory for a container at `containerPath`.
    public func stateDirectoryPath(containerPath: String) -> String {
        stateDirectory ?? (containerPath == "/" ? "/" : containerPath + "/") + Self.defaultStateDirectoryName
    }

    /// The pass-through options as one `-o` string for libfuse, escaped so
    /// libfuse splits it as purgefs did (see `OptionList`).
    public var fuseOptionString: String { OptionList.joined(fuseOptions) }
}
