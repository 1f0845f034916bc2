import Glibc
import PurgeSys

/// Which content of a ubiquitous file the remote holds: the local file's
/// identity, size and modification time when it was uploaded (or
/// downloaded). The remote holds the current content exactly when the
/// local file still has this signature.
struct CloudSignature: Equatable, Sendable {
    var inode: UInt64
    var size: UInt64
    var modified: UInt64

    init(inode: UInt64, size: UInt64, modified: UInt64) {
        self.inode = inode
        self.size = size
        self.modified = modified
    }

    init(_ status: stat) {
        inode = UInt64(status.st_ino)
        size = UInt64(status.st_size)
        modified = UInt64(status.st_mtim.tv_sec) * 1_000_000_000 + UInt64(status.st_mtim.tv_nsec)
    }
}

/// One uploaded file: the signature of the content the remote holds, and
/// whether the local data has been evicted.
struct CloudRecord: Equatable, Sendable {
    var signature: CloudSignature
    var evicted: Bool
    /// The remote copy's size and modification time (ns) when this content
    /// was uploaded or downloaded: a remote copy that differs is a newer
    /// version (another device's). Zero when not known.
    var remoteSize: UInt64 = 0
    var remoteModified: UInt64 = 0

    init(signature: CloudSignature, evicted: Bool, remote: stat? = nil) {
        self.signature = signature
        self.evicted = evicted
        if let remote { setRemote(remote) }
    }

    mutating func setRemote(_ status: stat) {
        let version = CloudSignature(status)
        remoteSize = version.size
        remoteModified = version.modified
    }

    /// Whether `status` (the remote copy now) is another version than the recorded one.
    func isNewer(_ status: stat) -> Bool {
        guard remoteModified != 0 else { return false }
        let version = CloudSignature(status)
        return version.size != remoteSize || version.modified != remoteModified
    }
}

/// A remote change still to make: the local delete or rename happened, the
/// remote one may not have yet.
enum CloudIntent: Equatable, Sendable {
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
struct CloudManifest: Equatable, Sendable {
    static let fileName = "cloud"

    var records: [String: CloudRecord] = [:]
    var intents: [CloudIntent] = []

    init() {}

    var encoded: [UInt8] {
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

    init?(decoding data: [UInt8]) {
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            if line.hasPrefix("F ") {
                let parts = line.split(separator: " ", maxSplits: 7, omittingEmptySubsequences: false)
                guard parts.count == 8, let inode = UInt64(parts[1]), let size = UInt64(parts[2]),
                      let modified = UInt64(parts[3]), let evicted = Int(parts[4]),
                      let remoteSize = UInt64(parts[5]), let remoteModified = UInt64(parts[6])
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

    static func escaped(_ path: String) -> String {
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

    static func unescaped(_ text: Substring) -> String {
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
enum CloudZones {
    static func contains(_ zones: [String], _ path: String) -> Bool {
        zones.contains { path.hasPrefix($0 + "/") && path.count > $0.count + 1 }
    }
}
