/// An unsigned decimal number read exactly from text: `12`, `1.5`, `0.25`.
///
/// Sizes, percentages and durations all accept a decimal part; reading it as
/// integers (rather than through `Double`) keeps `1.5G` exact and makes
/// overflow an error instead of a silent rounding. No signs, exponents,
/// `inf` or `nan`: those are junk on a mount command line.
struct DecimalNumber: Equatable, Sendable {
    /// The digits before the point.
    var integerPart: UInt64
    /// The digits after the point, as an integer (`0.25` → 25).
    var fraction: UInt128
    /// How many digits followed the point (`0.25` → 2); 0 for a whole number.
    var fractionDigits: Int

    /// The most digits after the point that are read: enough for any size or
    /// duration that means something, and small enough that scaling by 2^40
    /// cannot overflow 128 bits.
    static let maxFractionDigits = 24

    /// Splits `text` into the number at its start and the rest (the unit).
    /// Returns `nil` when `text` does not start with a digit or has a point
    /// with no digits on one side (`.5`, `5.`).
    static func leading(_ text: Substring) throws(ValueError) -> (number: DecimalNumber, rest: Substring)? {
        var index = text.startIndex
        var integerPart: UInt64 = 0
        var sawDigit = false
        var tooLarge = false
        while index < text.endIndex, let digit = text[index].wholeNumberValue, text[index].isASCII {
            sawDigit = true
            let (times10, overflow1) = integerPart.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(digit))
            if overflow1 || overflow2 { tooLarge = true }
            integerPart = sum
            index = text.index(after: index)
        }
        guard sawDigit else { return nil }
        var fraction: UInt128 = 0
        var fractionDigits = 0
        if index < text.endIndex, text[index] == "." {
            index = text.index(after: index)
            var sawFractionDigit = false
            while index < text.endIndex, let digit = text[index].wholeNumberValue, text[index].isASCII {
                sawFractionDigit = true
                fractionDigits += 1
                if fractionDigits > maxFractionDigits { throw .tooManyDecimals }
                fraction = fraction * 10 + UInt128(digit)
                index = text.index(after: index)
            }
            guard sawFractionDigit else { return nil }
        }
        if tooLarge { throw .tooLarge }
        return (DecimalNumber(integerPart: integerPart, fraction: fraction, fractionDigits: fractionDigits), text[index...])
    }

    /// The number times `scale`, rounded down; throws `.tooLarge` past `UInt64.max`.
    func scaled(by scale: UInt64) throws(ValueError) -> UInt64 {
        var denominator: UInt128 = 1
        for _ in 0..<fractionDigits { denominator *= 10 }
        let whole = UInt128(integerPart) * UInt128(scale)
        let part = fraction * UInt128(scale) / denominator
        let total = whole + part
        guard total <= UInt128(UInt64.max) else { throw .tooLarge }
        return UInt64(total)
    }

    /// True when there is a non-zero part after the point.
    var hasFraction: Bool { fraction != 0 }

    /// The value as a `Double` (for percentages, where exactness does not matter).
    var doubleValue: Double {
        var denominator = 1.0
        for _ in 0..<fractionDigits { denominator *= 10 }
        return Double(integerPart) + Double(fraction) / denominator
    }
}
