/// One entry of what rclone's remote control says of a remote
/// (`operations/list`, `operations/stat`): its path relative to the `fs`
/// asked for, its size, its modification time in ns since the epoch, and
/// whether it is a directory.
public struct RcloneItem: Equatable, Sendable {
    public var path: String
    public var size: UInt64
    public var modified: UInt64
    public var isDirectory: Bool

    public init(path: String, size: UInt64, modified: UInt64, isDirectory: Bool) {
        self.path = path
        self.size = size
        self.modified = modified
        self.isDirectory = isDirectory
    }

    /// `{"Path":..,"Size":..,"ModTime":"2026-12-03T13:48:39.499227253Z","IsDir":..}`;
    /// nil when a field is missing or malformed. A directory's size is -1 (0 here).
    public init?(_ item: JSONValue) {
        guard let path = item["Path"]?.stringValue, let size = item["Size"]?.signedIntegerValue,
              let isDirectory = item["IsDir"]?.boolValue,
              let time = item["ModTime"]?.stringValue, let modified = RcloneReply.nanoseconds(rfc3339: time)
        else { return nil }
        self.init(path: path, size: isDirectory ? 0 : UInt64(max(size, 0)), modified: modified, isDirectory: isDirectory)
    }
}

/// Reading rclone's remote control answers (JSON), and writing its requests.
public enum RcloneReply {
    /// An answer's error message (`{"error":"...","status":404,...}`), or
    /// nil when it is no error. On one line: every run of white space
    /// (rclone's S3 errors of the older SDK end in `\n\tstatus code: 403`)
    /// becomes one space, for a refusal at mount is one line on stderr.
    public static func error(in reply: JSONValue) -> String? {
        guard let message = reply["error"]?.stringValue else { return nil }
        return message.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    /// The items of an `operations/list` answer, nil when it is not one.
    public static func list(_ reply: JSONValue) -> [RcloneItem]? {
        guard let items = reply["list"]?.arrayValue else { return nil }
        var result: [RcloneItem] = []
        for item in items {
            guard let parsed = RcloneItem(item) else { return nil }
            result.append(parsed)
        }
        return result
    }

    /// The item of an `operations/stat` answer: `.some(nil)` when there is
    /// nothing at that path (`"item":null`), nil when it is not such an answer.
    public static func stat(_ reply: JSONValue) -> RcloneItem?? {
        guard let item = reply["item"] else { return nil }
        if item == .null { return .some(nil) }
        guard let parsed = RcloneItem(item) else { return nil }
        return .some(parsed)
    }

    /// A JSON object of string fields (and nested objects given as JSON text), in the order given.
    public static func request(_ fields: [(String, String)], raw: [(String, String)] = []) -> String {
        let parts = fields.map { JSONText.quoted($0.0) + ":" + JSONText.quoted($0.1) }
            + raw.map { JSONText.quoted($0.0) + ":" + $0.1 }
        return "{" + parts.joined(separator: ",") + "}"
    }

    /// Nanoseconds since the epoch of an RFC 3339 time: `2026-12-03T13:48:39Z`,
    /// with up to nine digits of fraction and `Z` or an offset `+01:00`.
    /// Nil for anything else or before the epoch.
    public static func nanoseconds(rfc3339 text: String) -> UInt64? {
        let bytes = Array(text.utf8)
        func digits(_ start: Int, _ count: Int) -> Int64? {
            guard start + count <= bytes.count else { return nil }
            var value: Int64 = 0
            for byte in bytes[start..<start + count] {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int64(byte - 0x30)
            }
            return value
        }
        func byte(_ at: Int, _ expected: Character) -> Bool { at < bytes.count && bytes[at] == expected.asciiValue! }
        guard let year = digits(0, 4), byte(4, "-"), let month = digits(5, 2), byte(7, "-"), let day = digits(8, 2),
              byte(10, "T") || byte(10, "t") || byte(10, " "),
              let hour = digits(11, 2), byte(13, ":"), let minute = digits(14, 2), byte(16, ":"), let second = digits(17, 2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        var fraction: Int64 = 0
        if byte(index, ".") {
            index += 1
            var count = 0
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                if count < 9 { fraction = fraction * 10 + Int64(bytes[index] - 0x30) }
                count += 1
                index += 1
            }
            guard count > 0 else { return nil }
            for _ in count..<max(count, 9) { fraction *= 10 }
        }
        var offset: Int64 = 0
        if byte(index, "Z") || byte(index, "z") {
            index += 1
        } else if byte(index, "+") || byte(index, "-") {
            guard let hours = digits(index + 1, 2), byte(index + 3, ":"), let minutes = digits(index + 4, 2) else { return nil }
            offset = (hours * 3600 + minutes * 60) * (byte(index, "-") ? -1 : 1)
            index += 6
        } else {
            return nil
        }
        guard index == bytes.count else { return nil }
        // Howard Hinnant's days_from_civil.
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        let seconds = days * 86400 + hour * 3600 + minute * 60 + second - offset
        guard seconds >= 0 else { return nil }
        return UInt64(seconds) * 1_000_000_000 + UInt64(fraction)
    }
}
