import Foundation

/// One file purged (or emptied below a tombstone directory), as the purge
/// log (`purgefs log --json`) records it.
public struct PurgeEvent: Equatable, Sendable, CustomStringConvertible {
    /// Why it went.
    public enum Reason: Equatable, Sendable {
        /// The space monitor, below the low mark.
        case monitor
        /// A write that needed room.
        case write
        /// `purge`, or `purgefs purge`.
        case manual
        /// A reason this library does not know (a newer purgefs).
        case other(String)

        init(_ text: String) {
            switch text {
            case "monitor": self = .monitor
            case "write": self = .write
            case "manual": self = .manual
            default: self = .other(text)
            }
        }
    }

    /// Relative to the container.
    public var path: String
    /// Bytes freed on the device.
    public var bytes: ByteCount
    /// The file's size.
    public var size: ByteCount
    public var reason: Reason
    /// `delete`, or `truncate` below a tombstone directory.
    public var action: String
    public var time: Date
    /// When it was last used before it went; `nil` when not known.
    public var lastUsed: Date?

    public var description: String { "\(path) (\(bytes.bytes) bytes, \(reason))" }

    /// One line of `purgefs log --json`; `nil` for anything else.
    init?(line: Substring) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
              let time = (object["time"] as? NSNumber)?.doubleValue, let path = object["path"] as? String,
              let bytes = (object["bytes"] as? NSNumber)?.uint64Value, let size = (object["size"] as? NSNumber)?.uint64Value
        else { return nil }
        self.path = path
        self.bytes = ByteCount(bytes: bytes)
        self.size = ByteCount(bytes: size)
        self.reason = Reason(object["reason"] as? String ?? "")
        self.action = object["action"] as? String ?? "delete"
        self.time = Date(timeIntervalSince1970: time)
        let lastUsed = (object["last_used"] as? NSNumber)?.doubleValue ?? 0
        self.lastUsed = lastUsed > 0 ? Date(timeIntervalSince1970: lastUsed) : nil
    }
}
