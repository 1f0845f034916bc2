/// The device directory's small files: `name value` lines, `value` to the
/// end of the line. What is read back is hostile input (another process
/// wrote it; an older purgefs let any user write it): every line is
/// checked, every number bounded, and a file that does not parse is refused
/// whole with the reason (`DeviceRecordError`), never a trap.
public struct DeviceRecordLines {
    private var values: [String: String] = [:]

    /// The largest size read from a device's file (capacity, external, a
    /// mark, a member's usage, an item, a request): what options and
    /// attributes take, `ByteSize.maximum` (2^62 bytes). Sums of them
    /// saturate (`addingClamped`).
    public static let maximumBytes: UInt64 = ByteSize.maximum
    /// More lines than any of the files has.
    public static let lineLimit = 64
    /// The longest line: a member's `items` (512 pairs of two numbers).
    public static let lineLengthLimit = 1 << 15

    public init(_ data: [UInt8]) throws(DeviceRecordError) {
        guard let text = String(validating: data, as: UTF8.self) else { throw DeviceRecordError("not UTF-8 text") }
        // By scalar, not by Character: a value that ends in a carriage return (a
        // container's path may) would make "\r\n" one Character and swallow the
        // next line, and a space before a combining mark would be no space.
        let lines = text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count <= Self.lineLimit + 1 else { throw DeviceRecordError("more than \(Self.lineLimit) lines") }
        for (index, line) in lines.enumerated() where !line.isEmpty {
            guard String(line).utf8.count <= Self.lineLengthLimit else {
                throw DeviceRecordError("line \(index + 1) is longer than \(Self.lineLengthLimit) bytes")
            }
            guard let space = line.firstIndex(of: " ") else { throw DeviceRecordError("line \(index + 1) has no value") }
            let name = String(line[..<space])
            guard values[name] == nil else { throw DeviceRecordError("line \(index + 1): a second \(name)") }
            values[name] = String(line[line.index(after: space)...])
        }
    }

    /// The value of line `name`, if there is one.
    public subscript(name: String) -> String? { values[name] }

    /// The value of line `name`, which must be there.
    public func text(_ name: String) throws(DeviceRecordError) -> String {
        guard let value = values[name] else { throw DeviceRecordError("no \(name) line") }
        return value
    }

    /// A number of line `name`: decimal digits, at most `maximum`.
    public func number(_ name: String, maximum: UInt64 = .max) throws(DeviceRecordError) -> UInt64 {
        try Self.number(try text(name), maximum: maximum, what: name)
    }

    /// A number of bytes: at most `maximumBytes`.
    public func bytes(_ name: String) throws(DeviceRecordError) -> UInt64 {
        try number(name, maximum: Self.maximumBytes)
    }

    /// `bytes(name)` when the line is there.
    public func optionalBytes(_ name: String) throws(DeviceRecordError) -> UInt64? {
        values[name] == nil ? nil : try bytes(name)
    }

    public static func number(_ text: some StringProtocol, maximum: UInt64, what: String) throws(DeviceRecordError) -> UInt64 {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let value = UInt64(text) else {
            throw DeviceRecordError("\(what) \(text.prefix(40)) is not a number")
        }
        guard value <= maximum else { throw DeviceRecordError("\(what) \(value) is more than \(maximum)") }
        return value
    }
}

/// Why a device's file was refused: one line for the daemon log.
public struct DeviceRecordError: Error, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
