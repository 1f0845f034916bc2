/// JSON without Foundation: what `--json`, the purge log and the pages
/// write, and what is read back (reports, rclone's remote control). Object
/// fields keep the order they are given in, so output reads the same every run.
public indirect enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    /// Kept as its text: integers of 64 bits stay exact.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    public static func integer(_ value: UInt64) -> JSONValue { .number(String(value)) }
    public static func integer(_ value: Int) -> JSONValue { .number(String(value)) }

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.number(a), .number(b)): return a == b
        case let (.string(a), .string(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.object(a), .object(b)): return a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    /// The value of `key` in an object.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let fields) = self else { return nil }
        return fields.first { $0.0 == key }?.1
    }

    public var stringValue: String? { if case .string(let text) = self { text } else { nil } }
    public var doubleValue: Double? { if case .number(let text) = self { Double(text) } else { nil } }
    /// A whole number from 0 to `ByteSize.maximum`, as every size and count
    /// purgefs writes in a report is: a larger one, in a report given back
    /// (`report`, `explore --replay`, the pages), reads as none, so no sum
    /// of a report's figures can overflow.
    public var integerValue: UInt64? { if case .number(let text) = self { ByteSize.bounded(UInt64(text)) } else { nil } }
    /// A whole number that may be negative (rclone's size of a directory is -1).
    public var signedIntegerValue: Int64? { if case .number(let text) = self { Int64(text) } else { nil } }
    public var arrayValue: [JSONValue]? { if case .array(let items) = self { items } else { nil } }
    public var boolValue: Bool? { if case .bool(let value) = self { value } else { nil } }

    // MARK: Writing

    /// Indented by two spaces a level, without a trailing newline.
    public var pretty: String { render(indent: 0) }

    private func render(indent: Int) -> String {
        let inner = String(repeating: " ", count: indent + 2), outer = String(repeating: " ", count: indent)
        switch self {
        case .null: return "null"
        case .bool(let value): return value ? "true" : "false"
        case .number(let text): return text
        case .string(let text): return Self.quoted(text)
        case .array(let items):
            if items.isEmpty { return "[]" }
            return "[\n" + items.map { inner + $0.render(indent: indent + 2) }.joined(separator: ",\n") + "\n" + outer + "]"
        case .object(let fields):
            if fields.isEmpty { return "{}" }
            return "{\n" + fields.map { inner + Self.quoted($0.0) + ": " + $0.1.render(indent: indent + 2) }.joined(separator: ",\n")
                + "\n" + outer + "}"
        }
    }

    /// A JSON string literal.
    public static func quoted(_ text: String) -> String { JSONText.quoted(text) }

    // MARK: Reading

    /// Parses one JSON text (surrounding white space allowed); `nil` if it is not valid JSON.
    public init?(parsing text: String) {
        self.init(parsing: Array(text.utf8))
    }

    /// Parses one JSON text given as its UTF-8 bytes.
    public init?(parsing bytes: [UInt8]) {
        var parser = Parser(bytes)
        guard let value = parser.value(depth: 0) else { return nil }
        parser.skipSpace()
        guard parser.atEnd else { return nil }
        self = value
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { index == bytes.count }
        var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipSpace() {
            while let byte = peek, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
        }

        mutating func literal(_ word: String) -> Bool {
            let expected = Array(word.utf8)
            guard bytes.count - index >= expected.count, Array(bytes[index..<index + expected.count]) == expected else { return false }
            index += expected.count
            return true
        }

        mutating func value(depth: Int) -> JSONValue? {
            guard depth < 64 else { return nil }
            skipSpace()
            switch peek {
            case UInt8(ascii: "{"): return object(depth: depth)
            case UInt8(ascii: "["): return array(depth: depth)
            case UInt8(ascii: "\""): return string().map(JSONValue.string)
            case UInt8(ascii: "t"): return literal("true") ? .bool(true) : nil
            case UInt8(ascii: "f"): return literal("false") ? .bool(false) : nil
            case UInt8(ascii: "n"): return literal("null") ? .null : nil
            default: return number()
            }
        }

        mutating func object(depth: Int) -> JSONValue? {
            index += 1
            var fields: [(String, JSONValue)] = []
            skipSpace()
            if peek == UInt8(ascii: "}") { index += 1; return .object(fields) }
            while true {
                skipSpace()
                guard peek == UInt8(ascii: "\""), let key = string() else { return nil }
                skipSpace()
                guard peek == UInt8(ascii: ":") else { return nil }
                index += 1
                guard let value = value(depth: depth + 1) else { return nil }
                fields.append((key, value))
                skipSpace()
                switch peek {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "}"): index += 1; return .object(fields)
                default: return nil
                }
            }
        }

        mutating func array(depth: Int) -> JSONValue? {
            index += 1
            var items: [JSONValue] = []
            skipSpace()
            if peek == UInt8(ascii: "]") { index += 1; return .array(items) }
            while true {
                guard let item = value(depth: depth + 1) else { return nil }
                items.append(item)
                skipSpace()
                switch peek {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "]"): index += 1; return .array(items)
                default: return nil
                }
            }
        }

        mutating func number() -> JSONValue? {
            let start = index
            if peek == UInt8(ascii: "-") { index += 1 }
            let isNumberByte: (UInt8) -> Bool = { (0x30...0x39).contains($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e")
                || $0 == UInt8(ascii: "E") || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") }
            while let byte = peek, isNumberByte(byte) { index += 1 }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            guard index > start, Double(text) != nil, text.first != "+" else { return nil }
            return .number(text)
        }

        mutating func string() -> String? {
            index += 1
            var scalars = String.UnicodeScalarView()
            var raw: [UInt8] = []
            func flush() {
                scalars.append(contentsOf: String(decoding: raw, as: UTF8.self).unicodeScalars)
                raw.removeAll()
            }
            while let byte = peek {
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    flush()
                    return String(scalars)
                case UInt8(ascii: "\\"):
                    flush()
                    guard let escape = peek else { return nil }
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""): scalars.append("\"")
                    case UInt8(ascii: "\\"): scalars.append("\\")
                    case UInt8(ascii: "/"): scalars.append("/")
                    case UInt8(ascii: "b"): scalars.append("\u{8}")
                    case UInt8(ascii: "f"): scalars.append("\u{c}")
                    case UInt8(ascii: "n"): scalars.append("\n")
                    case UInt8(ascii: "r"): scalars.append("\r")
                    case UInt8(ascii: "t"): scalars.append("\t")
                    case UInt8(ascii: "u"):
                        guard var code = hex4() else { return nil }
                        if (0xD800..<0xDC00).contains(code), literal("\\u"), let low = hex4(), (0xDC00..<0xE000).contains(low) {
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        }
                        scalars.append(Unicode.Scalar(code) ?? "\u{FFFD}")
                    default: return nil
                    }
                case 0..<0x20:
                    return nil
                default:
                    raw.append(byte)
                }
            }
            return nil
        }

        mutating func hex4() -> UInt32? {
            guard bytes.count - index >= 4, let code = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16)
            else { return nil }
            index += 4
            return code
        }
    }
}
