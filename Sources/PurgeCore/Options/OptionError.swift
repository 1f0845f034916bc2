/// Why a `-o` option list was refused. Each `description` is one line that
/// names the option and the bad value, ready to follow `purgefs: `.
public enum OptionError: Error, Equatable, Sendable, CustomStringConvertible {
    /// An option purgefs does not know (neither its own, nor FUSE's, nor an fstab word).
    case unknownOption(String)
    /// `name` needs `name=VALUE` but was given bare.
    case missingValue(option: String)
    /// A flag such as `optimize_storage` or `allow_other` was given `=VALUE`.
    case unexpectedValue(option: String, value: String)
    /// The value could not be read; `reason` says why.
    case invalidValue(option: String, value: String, reason: ValueError)
    /// A zone or bundle path is not a clean path inside the container.
    case invalidRelativePath(option: String, path: String, reason: RelativePathProblem)
    /// `cloud` or `state` is not an absolute path.
    case notAbsolutePath(option: String, path: String)
    /// `low` is above `high` (both shown as given, resolved against the capacity if needed).
    case lowAboveHigh(low: String, high: String)
    /// `external` leaves no room in the simulated device.
    case externalNotBelowCapacity(external: String, capacity: String)
    /// The same directory is both purgeable and ubiquitous (or one contains the other).
    case zonesOverlap(purgeable: String, ubiquitous: String)
    /// Two options that cannot both hold.
    case conflictingOptions(String, String)
    /// A purgeable or ubiquitous zone would hold purgefs's own state directory.
    case coversStateDirectory(option: String, path: String)
    /// `state=` names the container itself.
    case stateDirectoryIsContainer(String)
    /// `cloud=` is the container, lies inside it, or holds it (`/` included):
    /// the remote store would be served and uploaded into itself, or an
    /// upload renamed over the container's own files.
    case cloudOverlapsContainer(String, container: String)
    /// `cloud=` is the state directory, lies inside it, or holds it.
    case cloudOverlapsStateDirectory(String, state: String)
    /// `subtype=` with another name: `purgefs unmount` finds mounts by their type `fuse.purgefs`.
    case unsupportedSubtype(String)

    /// `device=` is not a plain name.
    case invalidDeviceName(String, reason: DeviceNameProblem)
    /// `device_policy=` is neither `quota` nor `lru`.
    case invalidPolicy(String)
    /// `device_policy` or `cache_quota` without `device`.
    case needsDevice(option: String)
    /// A shared device's lock stayed held, so its settings could not be changed.
    case deviceBusy(String)
    /// A shared device's capacity would not hold its external use and what
    /// its containers hold outside their caches.
    case noSpaceLeft(capacity: String, external: String, used: String)

    /// One line whatever the values hold: a control character that an `-o`
    /// escape (`\012`) or a file put into a value is shown as that escape.
    public var description: String {
        var line = ""
        for scalar in message.unicodeScalars {
            if scalar.value < 0x20 || scalar.value == 0x7f {
                let octal = String(scalar.value, radix: 8)
                line += "\\" + String(repeating: "0", count: 3 - octal.count) + octal
            } else {
                line.unicodeScalars.append(scalar)
            }
        }
        return line
    }

    private var message: String {
        switch self {
        case .invalidDeviceName(let name, let reason):
            return "device=\(name): \(reason)"
        case .invalidPolicy(let text):
            return "device_policy=\(text): must be quota or lru"
        case .deviceBusy(let name):
            return "device \(name) is busy (its lock stayed held): its settings were not changed; try again"
        case .noSpaceLeft(let capacity, let external, let used):
            return "capacity=\(capacity) leaves no space on the shared device: external=\(external) and "
                + "\(used) its containers hold outside their caches fill it"
        case .needsDevice(let option):
            return "mount option '\(option)' applies to a shared device only: add device=NAME"
        case .unknownOption(let name):
            return "unknown mount option '\(name)'"
        case .missingValue(let option):
            return "mount option '\(option)' needs a value: \(option)=VALUE"
        case .unexpectedValue(let option, let value):
            return "mount option '\(option)' takes no value (got \(option)=\(value))"
        case .invalidValue(let option, let value, let reason):
            return "\(option)=\(value): \(reason)"
        case .invalidRelativePath(let option, let path, let reason):
            return "\(option): '\(path)' \(reason)"
        case .notAbsolutePath(let option, let path):
            return "\(option)=\(path): must be an absolute path"
        case .lowAboveHigh(let low, let high):
            return "low=\(low) is above high=\(high): purging starts below low and stops at high"
        case .externalNotBelowCapacity(let external, let capacity):
            return "external=\(external) leaves no space in capacity=\(capacity): external must be less than capacity"
        case .zonesOverlap(let purgeable, let ubiquitous):
            return "purgeable zone '\(purgeable)' overlaps ubiquitous zone '\(ubiquitous)': a file cannot be both"
        case .conflictingOptions(let first, let second):
            return "mount options '\(first)' and '\(second)' contradict each other"
        case .coversStateDirectory(let option, let path):
            return "\(option) zone '\(path)' would hold purgefs's own state directory; choose another zone or state="
        case .stateDirectoryIsContainer(let path):
            return "state=\(path): the state directory cannot be the container itself"
        case .cloudOverlapsContainer(let path, let container):
            return "cloud=\(path): the remote store must be outside the container \(container), and must not hold it"
        case .cloudOverlapsStateDirectory(let path, let state):
            return "cloud=\(path): the remote store must be outside the state directory \(state), and must not hold it"
        case .unsupportedSubtype(let name):
            return "subtype=\(name): purgefs mounts always have subtype 'purgefs' (type fuse.purgefs)"
        }
    }
}

/// What is wrong with a path that must lie inside the container.
public enum RelativePathProblem: Error, Equatable, Sendable, CustomStringConvertible {
    case empty
    case absolute
    case parentReference
    case containerItself

    public var description: String {
        switch self {
        case .empty: return "is empty (an empty entry between ':' separators?)"
        case .absolute: return "must be relative to the container, not absolute"
        case .parentReference: return "must not contain '..'"
        case .containerItself: return "is the container itself; name a directory inside it"
        }
    }
}
