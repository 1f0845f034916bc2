/// The little of HTTP/1.x that the cloud tier's own client needs to talk to
/// rclone's remote control: request heads, response heads, percent-encoding
/// and Basic credentials. Requests are HTTP/1.0, so answers are never
/// chunked: a body ends with the connection, or after its Content-Length.
public enum HTTPMessage {
    /// A request head: `METHOD TARGET HTTP/1.0`, the headers given, and the blank line.
    public static func requestHead(_ method: String, _ target: String, headers: [(String, String)]) -> String {
        var text = "\(method) \(target) HTTP/1.0\r\nHost: localhost\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        return text + "\r\n"
    }

    /// A parsed response head: the status code and the headers, names in lower case.
    public struct ResponseHead: Equatable, Sendable {
        public var status: Int
        public var headers: [String: String]

        public var contentLength: UInt64? { headers["content-length"].flatMap { UInt64($0) } }
    }

    /// Where the head ends in `bytes` (the index after its blank line), nil while it has not.
    public static func headEnd(in bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 3..<bytes.count
        where bytes[index - 3] == 13 && bytes[index - 2] == 10 && bytes[index - 1] == 13 && bytes[index] == 10 {
            return index + 1
        }
        return nil
    }

    /// Parses a response head (without the blank line's bytes, or with them);
    /// nil when the status line is not `HTTP/1.x NNN ...`.
    public static func responseHead(_ bytes: ArraySlice<UInt8>) -> ResponseHead? {
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: true)
        guard let first = lines.first else { return nil }
        let parts = first.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1].count == 3, let status = Int(parts[1]) else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].drop { $0 == " " || $0 == "\t" }
            headers[name] = String(value.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
        }
        return ResponseHead(status: status, headers: headers)
    }

    /// `text` percent-encoded for a URL's path or query: everything but
    /// letters, digits, `-._~` (and `/` when `keepingSlashes`) as `%XX`.
    public static func percentEncoded(_ text: String, keepingSlashes: Bool = true) -> String {
        var result = ""
        for byte in text.utf8 {
            let character = Character(Unicode.Scalar(byte))
            if byte < 0x80 && (character.isLetter || character.isNumber || "-._~".contains(character) || (keepingSlashes && byte == 0x2F)) {
                result.append(character)
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                result += "%" + (hex.count == 1 ? "0" : "") + hex
            }
        }
        return result
    }

    /// `Basic <base64 of user:password>`.
    public static func basicAuthorization(user: String, password: String) -> String {
        "Basic " + base64(Array((user + ":" + password).utf8))
    }

    public static func base64(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
        var result = ""
        var index = 0
        while index < bytes.count {
            let count = min(3, bytes.count - index)
            var group = UInt32(bytes[index]) << 16
            if count > 1 { group |= UInt32(bytes[index + 1]) << 8 }
            if count > 2 { group |= UInt32(bytes[index + 2]) }
            for position in 0..<4 {
                result.append(position <= count ? alphabet[Int(group >> (18 - 6 * UInt32(position)) & 63)] : "=")
            }
            index += 3
        }
        return result
    }
}
