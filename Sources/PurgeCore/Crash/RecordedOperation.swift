/// One line of the operation log a mount with `record=DIR` keeps
/// (`DIR/operations`, what `purgefs explore` reads): an operation that
/// changed the container, in the order the handlers made them, or what the
/// command had printed on stdout by then. Data lives in `DIR/data`: a
/// record names its offset there and its length.
///
/// Files and directories are named by identity (`EntryID` of the backing
/// inode), names by their bytes (hex in the log): the reader knows the
/// tree at the start and follows the name changes, so a write through a
/// descriptor of a file renamed or unlinked since still lands in the right
/// file.
public enum RecordedOperation: Sendable, Equatable {
    /// `length` bytes at `offset` of `file` now hold `data.length` bytes
    /// from the data file (what the file held there after the change; fewer
    /// than `length` when the file ends first).
    case write(EntryID, offset: UInt64, length: UInt64, data: UInt64)
    /// The file's size became `size` (truncate, `O_TRUNC`, `fallocate`).
    case resize(EntryID, size: UInt64)
    /// `name` in `parent` was made for `entry` (create, mkdir, mknod,
    /// symlink, or link when `entry` exists already).
    case created(parent: EntryID, name: [UInt8], entry: EntryID, kind: EntryKind, mode: UInt32, target: [UInt8])
    /// `name` in `parent` is gone (unlink, rmdir, replaced by a rename: then
    /// the `moved` onto it follows at once, written under the same hold of
    /// the log's lock).
    case removed(parent: EntryID, name: [UInt8], entry: EntryID)
    /// `name` in `parent` became `newName` in `newParent`.
    case moved(parent: EntryID, name: [UInt8], newParent: EntryID, newName: [UInt8], entry: EntryID)
    /// `RENAME_EXCHANGE` of two names.
    case exchanged(parent: EntryID, name: [UInt8], newParent: EntryID, newName: [UInt8])
    /// `fsync`, `fdatasync`, an `O_SYNC`/`O_DSYNC` write, `msync(MS_SYNC)`
    /// of the file: its data and size are durable.
    case synced(EntryID)
    /// `fsync` of the directory: the name changes up to its last one are durable.
    case directorySynced(EntryID)
    /// The command printed `length` bytes (at `data` in the data file)
    /// before the next operation. Not an operation.
    case output(data: UInt64, length: UInt64)

    /// The files of a `record=DIR` directory.
    public static let operationsFileName = "operations"
    public static let dataFileName = "data"
    public static let outputFileName = "output"

    public enum EntryKind: String, Sendable {
        case file = "f", directory = "d", symbolicLink = "l", other = "o"
    }

    /// Whether it is an operation (everything but `output`), counted as
    /// crash point k.
    public var isOperation: Bool {
        if case .output = self { return false }
        return true
    }

    /// The log's line, without its newline.
    public var line: String {
        switch self {
        case .write(let file, let offset, let length, let data):
            return "W \(Self.text(file)) \(offset) \(length) \(data)"
        case .resize(let file, let size):
            return "T \(Self.text(file)) \(size)"
        case .created(let parent, let name, let entry, let kind, let mode, let target):
            return "C \(Self.text(parent)) \(Self.hex(name)) \(Self.text(entry)) \(kind.rawValue) \(String(mode, radix: 8)) \(Self.hex(target))"
        case .removed(let parent, let name, let entry):
            return "R \(Self.text(parent)) \(Self.hex(name)) \(Self.text(entry))"
        case .moved(let parent, let name, let newParent, let newName, let entry):
            return "M \(Self.text(parent)) \(Self.hex(name)) \(Self.text(newParent)) \(Self.hex(newName)) \(Self.text(entry))"
        case .exchanged(let parent, let name, let newParent, let newName):
            return "X \(Self.text(parent)) \(Self.hex(name)) \(Self.text(newParent)) \(Self.hex(newName))"
        case .synced(let file): return "S \(Self.text(file))"
        case .directorySynced(let directory): return "D \(Self.text(directory))"
        case .output(let data, let length): return "P \(data) \(length)"
        }
    }

    /// Parses a line `line` wrote; nil for anything else.
    public init?(line: Substring) {
        let fields = line.split(separator: " ", omittingEmptySubsequences: false)
        guard let tag = fields.first else { return nil }
        func id(_ index: Int) -> EntryID? { index < fields.count ? Self.entry(fields[index]) : nil }
        // Offsets, lengths and sizes at most ByteSize.maximum, so an offset plus a length cannot overflow.
        func number(_ index: Int) -> UInt64? { index < fields.count ? ByteSize.bounded(UInt64(fields[index])) : nil }
        func bytes(_ index: Int) -> [UInt8]? { index < fields.count ? Self.unhex(fields[index]) : nil }
        switch (tag, fields.count) {
        case ("W", 5):
            guard let file = id(1), let offset = number(2), let length = number(3), let data = number(4) else { return nil }
            self = .write(file, offset: offset, length: length, data: data)
        case ("T", 3):
            guard let file = id(1), let size = number(2) else { return nil }
            self = .resize(file, size: size)
        case ("C", 7):
            guard let parent = id(1), let name = bytes(2), let entry = id(3), let kind = EntryKind(rawValue: String(fields[4])),
                  let mode = UInt32(fields[5], radix: 8), let target = bytes(6) else { return nil }
            self = .created(parent: parent, name: name, entry: entry, kind: kind, mode: mode, target: target)
        case ("R", 4):
            guard let parent = id(1), let name = bytes(2), let entry = id(3) else { return nil }
            self = .removed(parent: parent, name: name, entry: entry)
        case ("M", 6):
            guard let parent = id(1), let name = bytes(2), let newParent = id(3), let newName = bytes(4), let entry = id(5) else { return nil }
            self = .moved(parent: parent, name: name, newParent: newParent, newName: newName, entry: entry)
        case ("X", 5):
            guard let parent = id(1), let name = bytes(2), let newParent = id(3), let newName = bytes(4) else { return nil }
            self = .exchanged(parent: parent, name: name, newParent: newParent, newName: newName)
        case ("S", 2):
            guard let file = id(1) else { return nil }
            self = .synced(file)
        case ("D", 2):
            guard let directory = id(1) else { return nil }
            self = .directorySynced(directory)
        case ("P", 3):
            guard let data = number(1), let length = number(2) else { return nil }
            self = .output(data: data, length: length)
        default:
            return nil
        }
    }

    /// Every record of a log's text, in order; throws naming the first line
    /// that is not one.
    public static func parse(_ text: Substring) throws(OperationLogError) -> [RecordedOperation] {
        var records: [RecordedOperation] = []
        for (index, line) in text.split(separator: "\n").enumerated() {
            guard let record = RecordedOperation(line: line) else {
                throw OperationLogError(line: index + 1, text: String(line.prefix(80)))
            }
            records.append(record)
        }
        return records
    }

    public static func text(_ id: EntryID) -> String { "\(id.device):\(id.inode)" }

    public static func entry(_ field: Substring) -> EntryID? {
        let parts = field.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return nil }
        return EntryID(device: device, inode: inode)
    }

    /// Bytes as lowercase hex; "-" for none (a field is never empty).
    public static func hex(_ bytes: [UInt8]) -> String {
        guard !bytes.isEmpty else { return "-" }
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    public static func unhex(_ field: Substring) -> [UInt8]? {
        if field == "-" { return [] }
        let utf8 = Array(field.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            default: return nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = value(utf8[index]), let low = value(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }
}

/// A line of an operation log that is not a record.
public struct OperationLogError: Error, Equatable, Sendable, CustomStringConvertible {
    public let line: Int
    public let text: String
    public var description: String { "line \(line) of the operation log is not a record: \(text)" }
}
