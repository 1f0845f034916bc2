extension MountOptions {
    /// Reads every `-o` argument given (each a comma-separated list, in
    /// order), then validates the result as a whole.
    ///
    /// A repeated option: the last one wins (a zone list is replaced, not
    /// merged). Pass-through FUSE options are kept in order in `fuseOptions`
    /// (libfuse too lets a later `rw` undo an earlier `ro`).
    public static func parse(_ optionList: [String]) throws(OptionError) -> MountOptions {
        var options = MountOptions()
        for argument in optionList {
            for item in OptionList.split(argument) {
                try options.apply(item)
            }
        }
        try options.validate()
        return options
    }

    /// Applies one option item (`name` or `name=value`).
    mutating func apply(_ item: String) throws(OptionError) {
        let name: String, value: String?
        if let equals = item.firstIndex(of: "=") {
            name = String(item[..<equals])
            value = String(item[item.index(after: equals)...])
        } else {
            name = item
            value = nil
        }

        if MountOptionCatalog.purgefsOptions.contains(where: { $0.name == name }) { given.insert(name) }
        switch name {
        case "capacity":
            let text = try Self.required(name, value)
            do throws(ValueError) {
                capacity = try CapacityModel.capacity(parsing: text)
            } catch {
                throw .invalidValue(option: name, value: text, reason: error)
            }
        case "external":
            let text = try Self.required(name, value)
            do throws(ValueError) {
                external = try CapacityModel.external(parsing: text)
            } catch {
                throw .invalidValue(option: name, value: text, reason: error)
            }
        case "low":
            low = try Self.threshold(name, try Self.required(name, value))
        case "high":
            high = try Self.threshold(name, try Self.required(name, value))
        case "purgeable":
            purgeableZones = try Self.zones(name, try Self.required(name, value))
        case "ubiquitous":
            ubiquitousZones = try Self.zones(name, try Self.required(name, value))
        case "cloud":
            let text = try Self.required(name, value)
            let remote: CloudLocation?
            do throws(ValueError) {
                remote = try CloudLocation.rclone(parsing: text)
            } catch {
                throw .invalidValue(option: name, value: text, reason: error)
            }
            if let remote { cloud = remote } else { cloud = .directory(try Self.absolute(name, text)) }
        case "faults":
            faults = try Self.absolute(name, try Self.required(name, value))
        case "state":
            stateDirectory = try Self.absolute(name, try Self.required(name, value))
        case "bundle":
            let text = try Self.required(name, value)
            do throws(RelativePathProblem) {
                bundle = try RelativePath.normalise(text)
            } catch {
                throw .invalidRelativePath(option: name, path: text, reason: error)
            }
        case "metrics_interval":
            let text = try Self.required(name, value)
            do throws(ValueError) {
                metricsIntervalSeconds = try DurationSeconds(parsing: text).seconds
            } catch {
                throw .invalidValue(option: name, value: text, reason: error)
            }
        case "device":
            let text = try Self.required(name, value)
            do throws(DeviceNameProblem) {
                device = try DeviceName.validate(text)
            } catch {
                throw .invalidDeviceName(text, reason: error)
            }
        case "device_policy":
            let text = try Self.required(name, value)
            guard let policy = DevicePolicy(rawValue: text) else { throw .invalidPolicy(text) }
            devicePolicy = policy
        case "cache_quota":
            let text = try Self.required(name, value)
            do throws(ValueError) {
                cacheQuota = try ByteSize(parsing: text).bytes
            } catch {
                throw .invalidValue(option: name, value: text, reason: error)
            }
        case "optimize_storage":
            try Self.flag(name, value)
            optimizeStorage = true
        case "crashable":
            try Self.flag(name, value)
            crashable = true
        case "record":
            record = try Self.absolute(name, try Self.required(name, value))
        case "passthrough":
            passthrough = try Self.onOrOff(name, value)
        case "uring":
            let text = try Self.required(name, value)
            guard let mode = RingMode(rawValue: text) else {
                throw .invalidValue(option: name, value: text, reason: .notOnPinnedOrOff)
            }
            uring = mode
        case "subtype":
            let text = try Self.required(name, value)
            guard text == "purgefs" else { throw .unsupportedSubtype(text) }
            fuseOptions.append(item)
        case "max_read":
            let text = try Self.required(name, value)
            guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }), UInt32(text) != nil else {
                throw .invalidValue(option: name, value: text, reason: text.isEmpty ? .empty : .notASize)
            }
            fuseOptions.append(item)
        case _ where MountOptionCatalog.passThroughFlags.contains(name):
            try Self.flag(name, value)
            fuseOptions.append(item)
        case _ where MountOptionCatalog.passThroughValueOptions.contains(name):
            let text = try Self.required(name, value)
            if text.isEmpty { throw .invalidValue(option: name, value: text, reason: .empty) }
            fuseOptions.append(item)
        case _ where MountOptionCatalog.ignoredPrefixes.contains(where: { item.hasPrefix($0) }):
            break
        case _ where MountOptionCatalog.ignoredWords.contains(name):
            try Self.flag(name, value)
        default:
            throw .unknownOption(name)
        }
    }

    private static func required(_ name: String, _ value: String?) throws(OptionError) -> String {
        guard let value else { throw .missingValue(option: name) }
        return value
    }

    private static func onOrOff(_ name: String, _ value: String?) throws(OptionError) -> Bool {
        let text = try required(name, value)
        switch text {
        case "on": return true
        case "off": return false
        default: throw .invalidValue(option: name, value: text, reason: .notOnOrOff)
        }
    }

    private static func flag(_ name: String, _ value: String?) throws(OptionError) {
        if let value { throw .unexpectedValue(option: name, value: value) }
    }

    private static func threshold(_ name: String, _ text: String) throws(OptionError) -> SpaceThreshold {
        do throws(ValueError) {
            return try SpaceThreshold(parsing: text)
        } catch {
            throw .invalidValue(option: name, value: text, reason: error)
        }
    }

    /// `P1:P2` → normalised zone paths, duplicates dropped; an empty value means no zones.
    private static func zones(_ name: String, _ text: String) throws(OptionError) -> [String] {
        if text.isEmpty { return [] }
        var zones: [String] = []
        for entry in text.split(separator: ":", omittingEmptySubsequences: false) {
            do throws(RelativePathProblem) {
                let zone = try RelativePath.normalise(String(entry))
                if !zones.contains(zone) { zones.append(zone) }
            } catch {
                throw .invalidRelativePath(option: name, path: String(entry), reason: error)
            }
        }
        return zones
    }

    /// An absolute path, normalised lexically (it may not exist yet).
    private static func absolute(_ name: String, _ text: String) throws(OptionError) -> String {
        if text.isEmpty { throw .invalidValue(option: name, value: text, reason: .empty) }
        guard let path = AbsolutePath.normalise(text) else { throw .notAbsolutePath(option: name, path: text) }
        return path
    }
}
