/// The name of a shared device (`-o device=NAME`): it names a directory
/// under the runtime directory, so it must be one plain path component.
public enum DeviceName {
    /// The longest name accepted.
    public static let maximumLength = 64

    /// Checks `text`; returns it unchanged or throws why it cannot name a device.
    public static func validate(_ text: String) throws(DeviceNameProblem) -> String {
        if text.isEmpty { throw .empty }
        if text == "." || text == ".." || text.contains("..") { throw .parentReference }
        if text.contains("/") { throw .slash }
        if text.utf8.count > maximumLength { throw .tooLong }
        if text.first == "." || text.first == "-" { throw .badCharacters }
        guard text.unicodeScalars.allSatisfy({ $0.isASCII && (Self.allowed.contains(Character($0))) }) else {
            throw .badCharacters
        }
        return text
    }

    private static let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
}

/// Why a device name was refused.
public enum DeviceNameProblem: Error, Equatable, Sendable, CustomStringConvertible {
    case empty, slash, parentReference, tooLong, badCharacters

    public var description: String {
        switch self {
        case .empty: return "a device name is required"
        case .slash: return "a device name must not contain '/'"
        case .parentReference: return "a device name must not contain '..'"
        case .tooLong: return "a device name is at most \(DeviceName.maximumLength) characters"
        case .badCharacters: return "a device name is letters, digits, '.', '_' and '-', not starting with '.' or '-'"
        }
    }
}

/// How a shared device chooses whose caches to purge (`-o device_policy=`).
public enum DevicePolicy: String, Equatable, Sendable, CaseIterable {
    /// Android's installd: the container furthest over its cache quota first.
    case quota
    /// iOS-like: least recently used across the device, the container's last use weighing in.
    case lru
}
