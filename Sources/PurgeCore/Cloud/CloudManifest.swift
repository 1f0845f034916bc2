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

    /// Whether `copy`, the remote copy under the document's name now (nil
    /// when there is none), can stand for what this record says was
    /// uploaded: any copy when the remote's version is known (the recorded
    /// one, or another version, another device's save, which `download_status`
    /// calls `downloaded` and the download brings: stores keep times their
    /// own way, to the second on WebDAV, so neither size nor time tells a
    /// stale copy from a later save); one of the local size when it is not.
    /// No copy: the record is wrong, and the local data the only copy.
    public func isHeld(by copy: CloudSignature?) -> Bool {
        guard let copy else { return false }
        return remoteModified != 0 || copy.size == signature.size
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

    /// Read byte by byte, never by Character: a path that ends in a carriage
    /// return would make "\r\n" one Character (and swallow the next record),
    /// and one that starts with a combining mark would fuse with the space or
    /// tab before it (and the whole manifest would be refused).
    public init?(decoding data: [UInt8]) {
        func number(_ field: ArraySlice<UInt8>) -> UInt64? { UInt64(String(decoding: field, as: UTF8.self)) }
        for line in data.split(separator: 0x0A) {
            guard line.count >= 2, line[line.startIndex + 1] == 0x20 else { return nil }
            let rest = line.dropFirst(2)
            switch line.first {
            case UInt8(ascii: "F"):
                let parts = rest.split(separator: 0x20, maxSplits: 6, omittingEmptySubsequences: false)
                guard parts.count == 7, let inode = number(parts[0]), let size = ByteSize.bounded(number(parts[1])),
                      let modified = number(parts[2]), let evicted = Int(String(decoding: parts[3], as: UTF8.self)),
                      let remoteSize = ByteSize.bounded(number(parts[4])), let remoteModified = number(parts[5])
                else { return nil }
                var record = CloudRecord(
                    signature: CloudSignature(inode: inode, size: size, modified: modified), evicted: evicted == 1)
                record.remoteSize = remoteSize
                record.remoteModified = remoteModified
                records[Self.unescaped(parts[6])] = record
            case UInt8(ascii: "D"):
                intents.append(.remove(Self.unescaped(rest)))
            case UInt8(ascii: "R"):
                let pair = rest.split(separator: 0x09, omittingEmptySubsequences: false)
                guard pair.count == 2 else { return nil }
                intents.append(.rename(Self.unescaped(pair[0]), Self.unescaped(pair[1])))
            default:
                return nil
            }
        }
    }

    /// `%`, tab and newline as `%25`, `%09`, `%0A`, byte by byte (not by
    /// Character: "\r\n" is one Character, and a `\n` inside it must be escaped too).
    public static func escaped(_ path: String) -> String {
        var result: [UInt8] = []
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "%"): result += Array("%25".utf8)
            case 0x09: result += Array("%09".utf8)
            case 0x0A: result += Array("%0A".utf8)
            default: result.append(byte)
            }
        }
        return String(decoding: result, as: UTF8.self)
    }

    /// What `escaped` made, read back byte by byte; any other `%` is kept as it is.
    public static func unescaped(_ text: ArraySlice<UInt8>) -> String {
        let bytes = Array(text)
        var result: [UInt8] = []
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count {
                let code = String(decoding: bytes[index + 1...index + 2], as: UTF8.self)
                if let byte: UInt8 = ["25": UInt8(ascii: "%"), "09": 0x09, "0A": 0x0A][code] {
                    result.append(byte)
                    index += 3
                    continue
                }
            }
            result.append(bytes[index])
            index += 1
        }
        return String(decoding: result, as: UTF8.self)
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
