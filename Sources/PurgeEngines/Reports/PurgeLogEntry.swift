import PurgeCore
/// One line of a state directory's `purge.log`, as the daemon writes it:
///
/// `{"time":1764489600.123,"path":"caches/a.bin","bytes":4096,"size":4000,
///   "last_used":1764480000.5,"reason":"monitor","action":"delete"}`
public struct PurgeLogEntry: Equatable, Sendable {
    /// When it was purged, seconds since the epoch.
    public var time: Double
    /// Relative to the container.
    public var path: String
    /// Bytes freed on the device.
    public var bytes: UInt64
    /// The file's logical size.
    public var size: UInt64
    /// Last use, seconds since the epoch; 0 when not known.
    public var lastUsed: Double
    /// `monitor`, `write` or `manual` (others are shown as they are).
    public var reason: String
    /// `delete` or `truncate` (a tombstone).
    public var action: String

    /// Parses one line; `nil` for anything that is not such an object (a
    /// line torn by a crash, say). Unknown extra fields are ignored.
    public init?(line: some StringProtocol) {
        guard let object = JSONValue(parsing: String(line)),
              let time = object["time"]?.doubleValue, let path = object["path"]?.stringValue,
              let bytes = object["bytes"]?.integerValue, let size = object["size"]?.integerValue
        else { return nil }
        self.init(time: time, path: path, bytes: bytes, size: size,
                  lastUsed: object["last_used"]?.doubleValue ?? 0,
                  reason: object["reason"]?.stringValue ?? "?", action: object["action"]?.stringValue ?? "delete")
    }

    init(time: Double, path: String, bytes: UInt64, size: UInt64, lastUsed: Double, reason: String, action: String) {
        self.time = time
        self.path = path
        self.bytes = bytes
        self.size = size
        self.lastUsed = lastUsed
        self.reason = reason
        self.action = action
    }
}
