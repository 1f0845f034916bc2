/// One change to the block maps, as a line of `block-maps.journal` (and of
/// its snapshot, which is the `start` and `own` lines of every map):
///
/// - `start DEV INO BASEDEV BASEINO SHAREDLENGTH HANDLETYPE HANDLEHEX [STAMP]`:
///   member DEV:INO (its anchor's identity) became sparse on base
///   BASEDEV:BASEINO, sharing SHAREDLENGTH bytes; its anchor reopens by the
///   file handle (`-` for none). Replaces an earlier map of the member.
///   STAMP is `SIZE SECONDS NANOSECONDS`, the base's `BaseStamp`; lines
///   written before stamps have none.
/// - `own DEV INO FIRST END`: blocks [FIRST, END) became own.
/// - `shared-length DEV INO LENGTH`: `sharedLength` lowered (truncate).
/// - `base DEV INO BASEDEV BASEINO [STAMP]`: the member's base moved to a
///   copy holding the same bytes (the primary's break).
/// - `stamp DEV INO STAMP`: the member's base stamped anew (purgefs set the
///   original's times, or a map without a stamp was stamped at replay).
/// - `drop DEV INO`: the member is plain again (flattened) or gone.
///
/// Parsing treats the file as hostile: lines are bounded, numbers are plain
/// decimal without sign and in range, handles are even-length hex of at
/// most 128 bytes, and anything else is refused with a reason.
public enum BlockMapRecord: Equatable, Sendable {
    case start(member: EntryID, base: EntryID, sharedLength: UInt64, handleType: Int32, handle: [UInt8], stamp: BaseStamp? = nil)
    case own(member: EntryID, blocks: Range<UInt64>)
    case sharedLength(member: EntryID, length: UInt64)
    case rebase(member: EntryID, base: EntryID, stamp: BaseStamp? = nil)
    case stamp(member: EntryID, stamp: BaseStamp)
    case drop(member: EntryID)

    /// Longer lines are refused (the longest valid one is under 460 bytes).
    public static let maximumLineLength = 512
    /// `MAX_HANDLE_SZ`.
    public static let maximumHandleBytes = 128

    public var member: EntryID {
        switch self {
        case .start(let member, _, _, _, _, _), .own(let member, _), .sharedLength(let member, _),
             .rebase(let member, _, _), .stamp(let member, _), .drop(let member):
            member
        }
    }

    /// The record as one line, with its newline.
    public var line: [UInt8] {
        func id(_ entry: EntryID) -> String { "\(entry.device) \(entry.inode)" }
        let text: String
        switch self {
        case .start(let member, let base, let length, let type, let handle, let stamp):
            let hex = handle.isEmpty ? "-" : handle.map { byte in
                let digits = Array("0123456789abcdef")
                return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
            }.joined()
            text = "start \(id(member)) \(id(base)) \(length) \(type) \(hex)" + (stamp.map { " " + $0.fields } ?? "")
        case .own(let member, let blocks):
            text = "own \(id(member)) \(blocks.lowerBound) \(blocks.upperBound)"
        case .sharedLength(let member, let length):
            text = "shared-length \(id(member)) \(length)"
        case .rebase(let member, let base, let stamp):
            text = "base \(id(member)) \(id(base))" + (stamp.map { " " + $0.fields } ?? "")
        case .stamp(let member, let stamp):
            text = "stamp \(id(member)) \(stamp.fields)"
        case .drop(let member):
            text = "drop \(id(member))"
        }
        return Array((text + "\n").utf8)
    }

    /// Why a line was refused.
    public struct Malformed: Error, Equatable, Sendable, CustomStringConvertible {
        /// 1-based line number in the bytes parsed (0: not known).
        public var line: Int
        public var reason: String
        public init(line: Int = 0, _ reason: String) {
            self.line = line
            self.reason = reason
        }
        public var description: String { "line \(line): \(reason)" }
    }

    /// Parses one line (without its newline).
    public static func parse<Bytes: Collection<UInt8>>(line bytes: Bytes) throws(Malformed) -> BlockMapRecord {
        guard bytes.count <= maximumLineLength else { throw Malformed("line longer than \(maximumLineLength) bytes") }
        let fields = bytes.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard let verb = fields.first else { throw Malformed("empty line") }
        let arguments = Array(fields.dropFirst())
        func expect(_ count: Int) throws(Malformed) {
            guard arguments.count == count else { throw Malformed("\(String(decoding: verb, as: UTF8.self)) takes \(count) fields, not \(arguments.count)") }
        }
        func number(_ index: Int) throws(Malformed) -> UInt64 {
            guard let value = decimal(arguments[index]) else {
                throw Malformed("field \(index + 2) is not a decimal number: \(printable(arguments[index]))")
            }
            return value
        }
        func entry(_ index: Int) throws(Malformed) -> EntryID {
            EntryID(device: try number(index), inode: try number(index + 1))
        }
        /// A `BaseStamp` in the three fields from `index`.
        func stamp(_ index: Int) throws(Malformed) -> BaseStamp {
            let size = try number(index)
            let field = arguments[index + 1]
            let negative = field.first == UInt8(ascii: "-")
            guard let magnitude = decimal(field.dropFirst(negative ? 1 : 0)), magnitude <= UInt64(Int64.max) else {
                throw Malformed("field \(index + 3) is not a decimal number of seconds: \(printable(field))")
            }
            let nanoseconds = try number(index + 2)
            guard nanoseconds < 1_000_000_000 else { throw Malformed("nanoseconds \(nanoseconds) out of range") }
            return BaseStamp(
                size: size, modifiedSeconds: negative ? -Int64(magnitude) : Int64(magnitude), modifiedNanoseconds: UInt32(nanoseconds))
        }
        func stampIfGiven(after count: Int) throws(Malformed) -> BaseStamp? {
            guard arguments.count == count + 3 else {
                try expect(count)
                return nil
            }
            return try stamp(count)
        }
        switch String(decoding: verb, as: UTF8.self) {
        case "start":
            let baseStamp = try stampIfGiven(after: 7)
            let length = try number(4)
            guard length % BlockMap.blockSize == 0 else { throw Malformed("shared length \(length) is not a multiple of the block size") }
            let type = try number(5)
            guard type <= UInt64(Int32.max) else { throw Malformed("handle type \(type) out of range") }
            guard let handle = hex(arguments[6]) else { throw Malformed("handle is not hex of at most \(maximumHandleBytes) bytes") }
            return .start(
                member: try entry(0), base: try entry(2), sharedLength: length, handleType: Int32(type), handle: handle, stamp: baseStamp)
        case "own":
            try expect(4)
            let first = try number(2), end = try number(3)
            guard first < end else { throw Malformed("empty block range \(first)..<\(end)") }
            return .own(member: try entry(0), blocks: first..<end)
        case "shared-length":
            try expect(3)
            let length = try number(2)
            guard length % BlockMap.blockSize == 0 else { throw Malformed("shared length \(length) is not a multiple of the block size") }
            return .sharedLength(member: try entry(0), length: length)
        case "base":
            let baseStamp = try stampIfGiven(after: 4)
            return .rebase(member: try entry(0), base: try entry(2), stamp: baseStamp)
        case "stamp":
            try expect(5)
            return .stamp(member: try entry(0), stamp: try stamp(2))
        case "drop":
            try expect(2)
            return .drop(member: try entry(0))
        default:
            throw Malformed("unknown record \(printable(verb))")
        }
    }

    /// Plain decimal digits, at most 20, no sign, no overflow.
    static func decimal<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> UInt64? {
        guard !bytes.isEmpty, bytes.count <= 20 else { return nil }
        var value: UInt64 = 0
        for byte in bytes {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times, overflow) = value.multipliedReportingOverflow(by: 10)
            let (sum, carry) = times.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            guard !overflow, !carry else { return nil }
            value = sum
        }
        return value
    }

    /// `-` (no handle) or an even number of hex digits, at most 128 bytes.
    static func hex<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> [UInt8]? {
        if bytes.count == 1, bytes.first == UInt8(ascii: "-") { return [] }
        guard !bytes.isEmpty, bytes.count % 2 == 0, bytes.count <= 2 * maximumHandleBytes else { return nil }
        func nibble(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var result: [UInt8] = []
        var iterator = bytes.makeIterator()
        while let high = iterator.next(), let low = iterator.next() {
            guard let h = nibble(high), let l = nibble(low) else { return nil }
            result.append(h << 4 | l)
        }
        return result
    }

    /// At most 40 bytes of `bytes`, for a message.
    private static func printable<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String {
        String(decoding: bytes.prefix(40), as: UTF8.self).debugDescription
    }
}
