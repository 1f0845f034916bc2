import PurgeCore
import PurgeSys

/// Reads and writes the daemon's `user.purgefs.*` attributes by path, and
/// turns what goes wrong into one line. The calls are injectable so the
/// figures and reports can be tested without a mount.
public struct AttributeAccess: Sendable {
    public var read: @Sendable (_ name: String, _ path: String) throws(Errno) -> [UInt8]
    public var write: @Sendable (_ name: String, _ path: String, _ value: [UInt8]) throws(Errno) -> Void

    /// The real calls: `getxattr(2)` and `setxattr(2)` through PurgeSys.
    public static let live = AttributeAccess(
        read: { (name, path) throws(Errno) in try Paths.extendedAttribute(name, of: path) },
        write: { (name, path, value) throws(Errno) in try Paths.setExtendedAttribute(name, of: path, to: value) })

    /// The decimal value of `attribute` on `path`.
    public func number(_ attribute: PurgeAttribute, of path: String) throws(CommandExit) -> UInt64 {
        guard let value = try numberIfAnswered(attribute, of: path) else {
            throw .failure("\(path) does not answer \(attribute.fullName) (not a purgefs mount, or not one that has it)")
        }
        return value
    }

    /// The decimal value of `attribute` on `path`, or `nil` when the path
    /// does not exist or the attribute does not apply to it (`ENODATA`).
    public func numberIfAnswered(_ attribute: PurgeAttribute, of path: String) throws(CommandExit) -> UInt64? {
        let bytes: [UInt8]
        do throws(Errno) {
            bytes = try read(attribute.fullName, path)
        } catch {
            if error == .noData || error == .noEntry { return nil }
            throw Self.failure(error, reading: attribute, of: path)
        }
        guard let value = Self.decimal(bytes) else {
            throw .failure("\(attribute.fullName) of \(path) is not a number: '\(String(decoding: bytes.prefix(40), as: UTF8.self))'")
        }
        return value
    }

    /// Writes `value` as the attribute's text. `refusal`: the line to show
    /// when the daemon refuses it (`EINVAL`), if the caller knows better why.
    public func set(_ attribute: PurgeAttribute, of path: String, to value: String, refusal: String? = nil) throws(CommandExit) {
        do throws(Errno) {
            try write(attribute.fullName, path, Array(value.utf8))
        } catch {
            switch error {
            case .notPermitted, .accessDenied:
                throw .failure(attribute.isControl
                    ? "only the mount's owner or root may set \(attribute.fullName) on \(path)"
                    : "not allowed to set \(attribute.fullName) on \(path): \(error)")
            case .invalidArgument:
                throw .failure(refusal ?? "\(path) refused \(attribute.fullName)=\(value)")
            case .notConnected:
                throw Self.failure(error, reading: attribute, of: path)
            default:
                throw .failure("cannot set \(attribute.fullName) on \(path): \(error)")
            }
        }
    }

    /// ASCII decimal digits, with one trailing newline or NUL allowed.
    static func decimal(_ bytes: [UInt8]) -> UInt64? {
        var digits = bytes[...]
        if let last = digits.last, last == 0x0A || last == 0 { digits = digits.dropLast() }
        guard !digits.isEmpty, digits.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return UInt64(String(decoding: digits, as: UTF8.self))
    }

    private static func failure(_ error: Errno, reading attribute: PurgeAttribute, of path: String) -> CommandExit {
        if error == .notConnected {
            return .failure("\(path): the purgefs daemon is not answering (did it die? purgefs unmount the mount)")
        }
        return .failure("cannot read \(attribute.fullName) of \(path): \(error)")
    }
}

/// The device figures of a mount, read from its root's attributes, each the
/// daemon's `SpaceStatus` figure of the same name (SPEC "Space";
/// docs/DESIGN.md "The figures"): nothing is derived here, so `space`,
/// `usage`, `df` and the attributes cannot disagree.
public struct DeviceFigures: Equatable, Sendable {
    public var capacity: UInt64
    public var external: UInt64
    /// The container's physical bytes (`container_used`).
    public var containerUsed: UInt64
    /// Everything in use on the device, external included: df's Used (`device_used`).
    public var deviceUsed: UInt64
    public var available: UInt64
    public var availableImportant: UInt64
    public var availableOpportunistic: UInt64
    /// The whole container's purgeable bytes.
    public var purgeable: UInt64
    public var purgedBytes: UInt64
    public var purgedFiles: UInt64

    public static func read(root: String, _ access: AttributeAccess) throws(CommandExit) -> DeviceFigures {
        DeviceFigures(
            capacity: try access.number(.capacity, of: root),
            external: try access.number(.external, of: root),
            containerUsed: try access.number(.containerUsed, of: root),
            deviceUsed: try access.number(.deviceUsed, of: root),
            available: try access.number(.available, of: root),
            availableImportant: try access.number(.availableImportant, of: root),
            availableOpportunistic: try access.number(.availableOpportunistic, of: root),
            purgeable: try access.number(.purgeable, of: root),
            purgedBytes: try access.number(.purgedBytes, of: root),
            purgedFiles: try access.number(.purgedFiles, of: root))
    }
}

/// The recursive figures of one directory on a mount.
public struct DirectoryFigures: Equatable, Sendable {
    public var size: UInt64
    public var files: UInt64
    public var allocated: UInt64
    public var purgeable: UInt64
    public var cloneSavings: UInt64

    public static let zero = DirectoryFigures(size: 0, files: 0, allocated: 0, purgeable: 0, cloneSavings: 0)

    /// The figures of the directory at `path`, or `nil` when there is no
    /// directory there (missing, or a file: `files` does not apply).
    public static func readIfPresent(_ path: String, _ access: AttributeAccess) throws(CommandExit) -> DirectoryFigures? {
        guard let files = try access.numberIfAnswered(.files, of: path) else { return nil }
        return DirectoryFigures(
            size: try access.number(.size, of: path),
            files: files,
            allocated: try access.number(.allocated, of: path),
            purgeable: try access.number(.purgeable, of: path),
            cloneSavings: try access.number(.cloneSavings, of: path))
    }
}

extension UInt64 {
    public func clampedMinus(_ other: UInt64) -> UInt64 { self > other ? self - other : 0 }
}
