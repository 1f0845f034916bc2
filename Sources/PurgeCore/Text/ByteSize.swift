/// A number of bytes, read from and written as human text.
///
/// Accepted text (`ByteSize(parsing:)`):
/// - plain bytes: `0`, `4096`;
/// - a number with a unit `K`, `M`, `G` or `T`, powers of 1024 as SPEC says,
///   upper or lower case: `64K`, `1g`;
/// - optionally followed by `B` or `iB` (`1GB`, `1GiB`, `512B`): people type
///   them, and both mean the same powers of 1024 here — purgefs has no
///   powers-of-1000 units, so `GB` is not a trap of a different size;
/// - a decimal part with a unit (`1.5G`), rounded down to whole bytes; a
///   fraction of a plain byte count (`1.5`, `1.5B`) is refused.
///
/// Refused: empty text, a sign, spaces, exponents, other units, and anything
/// above `maximum` (2^62 bytes).
public struct ByteSize: Equatable, Comparable, Hashable, Sendable, CustomStringConvertible {
    public var bytes: UInt64

    public init(bytes: UInt64) { self.bytes = bytes }

    /// The largest size purgefs takes from a user, 2^62 bytes (4 EiB), a
    /// million times the largest disk made: every size that comes in
    /// (options, attributes, `purgefs space`, scenario files, fault rules,
    /// reports given back, the cloud manifest) is refused above it where it
    /// enters. Three such sizes add up without overflow (capacity, external
    /// and a container's use are the most any figure adds), and the space
    /// figures saturate besides (`addingClamped`, `subtractingClamped`), so
    /// no input can make the model trap.
    public static let maximum: UInt64 = 1 << 62

    /// `value` when it is at most `maximum`, else nil: for a size read as a
    /// plain number (a manifest's, a report's).
    public static func bounded(_ value: UInt64?) -> UInt64? {
        guard let value, value <= maximum else { return nil }
        return value
    }

    /// Reads a size as described on the type.
    public init(parsing text: String) throws(ValueError) {
        let text = Substring(text)
        if text.isEmpty { throw .empty }
        if text.first == "-" { throw .negative }
        do throws(ValueError) {
            guard let (number, rest) = try DecimalNumber.leading(text) else { throw .notASize }
            guard let unit = Self.unitScale(rest) else { throw .notASize }
            if unit == 1 && number.hasFraction { throw .fractionOfAByte }
            bytes = try number.scaled(by: unit)
        } catch .tooLarge {
            throw .aboveMaximumSize  // past 64 bits is past the maximum too: one refusal
        }
        if bytes > Self.maximum { throw .aboveMaximumSize }
    }

    /// The multiplier for a unit suffix, or `nil` if it is not one.
    private static func unitScale(_ suffix: Substring) -> UInt64? {
        switch suffix.lowercased() {
        case "", "b": return 1
        case "k", "kb", "kib": return 1 << 10
        case "m", "mb", "mib": return 1 << 20
        case "g", "gb", "gib": return 1 << 30
        case "t", "tb", "tib": return 1 << 40
        default: return nil
        }
    }

    public static func < (lhs: ByteSize, rhs: ByteSize) -> Bool { lhs.bytes < rhs.bytes }

    /// Human text with binary units and at most one decimal: `512 B`,
    /// `1 KiB`, `1.5 GiB`. Rounded to the nearest tenth; a value that rounds
    /// up to 1024 of a unit is shown in the next unit (`1 MiB`, not `1024 KiB`).
    public var description: String { Self.format(bytes) }

    /// See `description`.
    public static func format(_ bytes: UInt64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
        if bytes < 1024 { return "\(bytes) B" }
        var exponent = 1
        while exponent < units.count - 1, bytes >= UInt64(1) << (10 * (exponent + 1)) { exponent += 1 }
        var unit = UInt128(1) << (10 * exponent)
        var tenths = (UInt128(bytes) * 10 + unit / 2) / unit
        if tenths >= 10240, exponent < units.count - 1 {
            exponent += 1
            unit <<= 10
            tenths = (UInt128(bytes) * 10 + unit / 2) / unit
        }
        let whole = tenths / 10, tenth = tenths % 10
        return tenth == 0 ? "\(whole) \(units[exponent])" : "\(whole).\(tenth) \(units[exponent])"
    }
}

/// Saturating arithmetic for sizes and counts: a sum or product past
/// `UInt64.max` is `UInt64.max`, a difference below 0 is 0. The space
/// figures use these, so even values that never passed `ByteSize.maximum`
/// (a real device's `statvfs`, a neighbour's record) cannot make them trap.
extension UInt64 {
    public func addingClamped(_ other: UInt64) -> UInt64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }

    public func subtractingClamped(_ other: UInt64) -> UInt64 { self > other ? self - other : 0 }

    public func multipliedClamped(by other: UInt64) -> UInt64 {
        let (product, overflow) = multipliedReportingOverflow(by: other)
        return overflow ? .max : product
    }
}
