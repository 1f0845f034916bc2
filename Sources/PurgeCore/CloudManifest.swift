/// Which content of a ubiquitous file the remote holds: the local file's
/// identity, size and modification time when it was uploaded (or
/// downloaded). The remote holds the current content exactly when the
/// local file still has this signature.
public struct CloudSignature: Equatable, Sendable {
    public var inode: UInt64
    public var size: UInt64
    /// Modification time, ns.
    public var modified: UInt64

    public init(inode: UInt64, size: UInt64, modified: UInt64) {
        self.inode = inode
        self.size = size
        self.modified = modified
    }
}

/// One uploaded file: the signature of the content the remote holds, and
/// whether the local data has been evicted.
public struct CloudRecord: Equatable, Sendable {
    public var signature: CloudSignature
    public var evicted: Bool
    /// The remote copy's size and modification time (ns) when this content
    /// was uploaded or downloaded: a remote copy that differs is a newer
    /// version (another device's). Zero when not known.
    public var remoteSize: UInt64 = 0
    public var remoteModified: UInt64 = 0

    /// `remote`: the remote copy's version, when known.
    public init(signature: CloudSignature, evicted: Bool, remoteVersion remote: CloudSignature? = nil) {
        self.signature = signature
        self.evicted = evicted
        if let remote { setRemote(remote) }
    }

    public mutating func setRemote(_ version: CloudSignature) {
        remoteSize = version.size
        remoteModified = version.modified
    }

    /// Whether `version` (the remote copy now) is another version than the
    /// recorded one; never when the recorded one is not known.
    public func isNewer(_ version: CloudSignature) -> Bool {
        guard remoteModified != 0 else { return false }
        return version.size != remoteSize || version.modified != remoteModified
    }
}

/// A remote change still to make: the local delete or rename happened, the
/// remote one may not have yet.
public enum CloudIntent: Equatable, Sendable {
    case remove(String)
    case rename(String, String)
}

/// The cloud tier's durable state, `cloud` in the state directory: every
/// uploaded file by path, and the intents not yet applied to the remote.
///
/// ```
/// F <inode> <size> <mtime ns> <evicted 0|1> <remote size> <remote mtime ns> <path>
/// D <path>
/// R <path>\t<new path>
/// ```
/// Paths are relative to the container, with `%`, tab and newline escaped.
public struct CloudManifest: Equatable, Sendable {
    public static let fileName = "cloud"

    public var records: [String: CloudRecord] = [:]
    public var intents: [CloudIntent] = []

    public init() {}

    public var encoded: [UInt8] {
        var text = ""
        for (path, record) in records.sorted(by: { $0.key < $1.key }) {
            let signature = record.signature
            text += "F \(signature.inode) \(signature.size) \(signature.modified) \(record.evicted ? 1 : 0) "
                + "\(record.remoteSize) \(record.remoteModified) \(Self.escaped(path))\n"
        }
        for intent in intents {
            switch intent {
            case .remove(let path): text += "D \(Self.escaped(path))\n"
            case .rename(let from, let to): text += "R \(Self.escaped(from))\t\(Self.escaped(to))\n"
            }
        }
        return Array(text.utf8)
    }

    public init?(decoding data: [UInt8]) {
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            if line.hasPrefix("F ") {
                let parts = line.split(separator: " ", maxSplits: 7, omittingEmptySubsequences: false)
                guard parts.count == 8, let inode = UInt64(parts[1]), let size = ByteSize.bounded(UInt64(parts[2])),
                      let modified = UInt64(parts[3]), let evicted = Int(parts[4]),
                      let remoteSize = ByteSize.bounded(UInt64(parts[5])), let remoteModified = UInt64(parts[6])
                else { return nil }
                var record = CloudRecord(
                    signature: CloudSignature(inode: inode, size: size, modified: modified), evicted: evicted == 1)
                record.remoteSize = remoteSize
                record.remoteModified = remoteModified
                records[Self.unescaped(parts[7])] = record
            } else if line.hasPrefix("D ") {
                intents.append(.remove(Self.unescaped(line.dropFirst(2))))
            } else if line.hasPrefix("R ") {
                let pair = line.dropFirst(2).split(separator: "\t", omittingEmptySubsequences: false)
                guard pair.count == 2 else { return nil }
                intents.append(.rename(Self.unescaped(pair[0]), Self.unescaped(pair[1])))
            } else {
                return nil
            }
        }
    }

    public static func escaped(_ path: String) -> String {
        var result = ""
        for character in path {
            switch character {
            case "%": result += "%25"
            case "\t": result += "%09"
            case "\n": result += "%0A"
            default: result.append(character)
            }
        }
        return result
    }

    public static func unescaped(_ text: Substring) -> String {
        text.replacingOccurrences("%0A", "\n").replacingOccurrences("%09", "\t").replacingOccurrences("%25", "%")
    }
}

extension StringProtocol {
    fileprivate func replacingOccurrences(_ target: String, _ replacement: String) -> String {
        var result = ""
        var rest = Substring(self)
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound]
            result += replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}

/// Whether `path` (relative to the container) lies in one of the zones.
public enum CloudZones {
    public static func contains(_ zones: [String], _ path: String) -> Bool {
        zones.contains { path.hasPrefix($0 + "/") && path.count > $0.count + 1 }
    }
}

/// When a failed upload is tried again: the debounce doubled for each
/// failure in a row (at most ten doublings), never later than `longest`.
public struct CloudBackoff: Equatable, Sendable {
    public var base: UInt64
    public var longest: UInt64

    public init(base: UInt64, longest: UInt64) {
        self.base = base
        self.longest = longest
    }

    /// The wait (ns) after the `failures`-th failure in a row (1 for the first).
    public func delay(afterFailures failures: Int) -> UInt64 {
        min(longest, base << UInt64(min(max(failures, 0), 10)))
    }
}
