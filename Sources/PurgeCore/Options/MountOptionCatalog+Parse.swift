extension MountOptionCatalog {
    /// How the table's entries read a value: each takes the option's name
    /// (for the error) and the text after `=`, and throws an `OptionError`
    /// that names both.
    enum Parse {
        static func required(_ name: String, _ value: String?) throws(OptionError) -> String {
            guard let value else { throw .missingValue(option: name) }
            return value
        }

        static func flag(_ name: String, _ value: String?) throws(OptionError) {
            if let value { throw .unexpectedValue(option: name, value: value) }
        }

        /// A value read by a parser of `ValueError`s, its error named after the option.
        private static func checked<Value>(_ name: String, _ text: String,
                                           _ parse: (String) throws(ValueError) -> Value) throws(OptionError) -> Value {
            do throws(ValueError) {
                return try parse(text)
            } catch {
                throw .invalidValue(option: name, value: text, reason: error)
            }
        }

        static func capacity(_ name: String, _ text: String) throws(OptionError) -> UInt64 {
            try checked(name, text) { text throws(ValueError) in try CapacityModel.capacity(parsing: text) }
        }

        static func external(_ name: String, _ text: String) throws(OptionError) -> UInt64 {
            try checked(name, text) { text throws(ValueError) in try CapacityModel.external(parsing: text) }
        }

        static func size(_ name: String, _ text: String) throws(OptionError) -> UInt64 {
            try checked(name, text) { text throws(ValueError) in try ByteSize(parsing: text).bytes }
        }

        static func threshold(_ name: String, _ text: String) throws(OptionError) -> SpaceThreshold {
            try checked(name, text) { text throws(ValueError) in try SpaceThreshold(parsing: text) }
        }

        static func duration(_ name: String, _ text: String) throws(OptionError) -> UInt64 {
            try checked(name, text) { text throws(ValueError) in try DurationSeconds(parsing: text).seconds }
        }

        static func onOrOff(_ name: String, _ text: String) throws(OptionError) -> Bool {
            switch text {
            case "on": return true
            case "off": return false
            default: throw .invalidValue(option: name, value: text, reason: .notOnOrOff)
            }
        }

        static func ringMode(_ name: String, _ text: String) throws(OptionError) -> RingMode {
            guard let mode = RingMode(rawValue: text) else {
                throw .invalidValue(option: name, value: text, reason: .notOnPinnedOrOff)
            }
            return mode
        }

        static func policy(_ name: String, _ text: String) throws(OptionError) -> DevicePolicy {
            guard let policy = DevicePolicy(rawValue: text) else { throw .invalidPolicy(text) }
            return policy
        }

        static func device(_ name: String, _ text: String) throws(OptionError) -> String {
            do throws(DeviceNameProblem) {
                return try DeviceName.validate(text)
            } catch {
                throw .invalidDeviceName(text, reason: error)
            }
        }

        /// `DIR` (an absolute path) or `rclone:REMOTE:PATH`.
        static func cloud(_ name: String, _ text: String) throws(OptionError) -> CloudLocation {
            let remote = try checked(name, text) { text throws(ValueError) in try CloudLocation.rclone(parsing: text) }
            if let remote { return remote }
            return .directory(try absolute(name, text))
        }

        /// A path inside the container, normalised.
        static func relative(_ name: String, _ text: String) throws(OptionError) -> String {
            do throws(RelativePathProblem) {
                return try RelativePath.normalise(text)
            } catch {
                throw .invalidRelativePath(option: name, path: text, reason: error)
            }
        }

        /// `P1:P2` → normalised zone paths, duplicates dropped; an empty value means no zones.
        static func zones(_ name: String, _ text: String) throws(OptionError) -> [String] {
            if text.isEmpty { return [] }
            var zones: [String] = []
            for entry in text.split(separator: ":", omittingEmptySubsequences: false) {
                let zone = try relative(name, String(entry))
                if !zones.contains(zone) { zones.append(zone) }
            }
            return zones
        }

        /// An absolute path, normalised lexically (it may not exist yet).
        static func absolute(_ name: String, _ text: String) throws(OptionError) -> String {
            if text.isEmpty { throw .invalidValue(option: name, value: text, reason: .empty) }
            guard let path = AbsolutePath.normalise(text) else { throw .notAbsolutePath(option: name, path: text) }
            return path
        }
    }
}
