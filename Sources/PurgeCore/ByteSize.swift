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
/// above `UInt64.max` bytes.
public struct ByteSize: Equatable, Comparable, Hashable, Sendable, CustomStringConvertible {
    public var bytes: UInt64

    public init(bytes: UInt64) { self.bytes = bytes }

    /// Reads a size as described on the type.
    public init(parsing text: String) throws(ValueError) {
        let text = Substring(text)
        if text.isEmpty { throw .empty }
        if text.first == "-" { throw .negative }
        guard let (number, rest) = try DecimalNumber.leading(text) else { throw .notASize }
        guard let unit = Self.unitScale(rest) else { throw .notASize }
        if unit == 1 && number.hasFraction { throw .fractionOfAByte }
        bytes = try number.scaled(by: unit)
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
