/// Why a single value (a size, a threshold, a duration, a path) was refused.
///
/// The `description` is the reason only, written to follow the value in a
/// message such as `capacity=12Q: not a size (...)`; `OptionError` and the
/// command add the option or flag name in front.
public enum ValueError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Nothing was given where a value is required.
    case empty
    /// A leading minus sign: sizes, thresholds and durations are never negative.
    case negative
    /// Not a size: neither digits nor digits with a known unit.
    case notASize
    /// Not a threshold: neither a size nor `N%`.
    case notAThreshold
    /// Not a duration: neither seconds nor a number with `s`, `m`, `h` or `d`.
    case notADuration
    /// The value does not fit in 64 bits.
    case tooLarge
    /// A size above `ByteSize.maximum`.
    case aboveMaximumSize
    /// A fraction of a byte (`1.5` without a unit).
    case fractionOfAByte
    /// More decimal places than purgefs will read (see `Decimal.maxFractionDigits`).
    case tooManyDecimals
    /// A percentage outside (0, 100].
    case percentOutOfRange
    /// A duration shorter than one second once rounded down.
    case lessThanOneSecond
    /// Zero where only a positive amount makes sense (a capacity).
    case zero
    /// Neither `on` nor `off`.
    case notOnOrOff
    /// None of `on`, `pinned`, `off`.
    case notOnPinnedOrOff
    /// `rclone:` without a remote name and a colon after it.
    case notARcloneRemote

    public var description: String {
        switch self {
        case .empty: return "a value is required"
        case .negative: return "must not be negative"
        case .notASize: return "not a size (bytes, or a number with K, M, G or T)"
        case .notAThreshold: return "not a threshold (a size, or N% of the capacity)"
        case .notADuration: return "not a duration (seconds, or a number with s, m, h or d)"
        case .tooLarge: return "too large"
        case .aboveMaximumSize: return "more than 4 EiB (2^62 bytes), the largest size purgefs takes"
        case .fractionOfAByte: return "a fraction of a byte (use a unit, as in 1.5K)"
        case .tooManyDecimals: return "too many decimal places"
        case .percentOutOfRange: return "a percentage must be more than 0 and at most 100"
        case .lessThanOneSecond: return "must be at least one second"
        case .zero: return "must be more than 0"
        case .notOnOrOff: return "must be on or off"
        case .notOnPinnedOrOff: return "must be on, pinned or off"
        case .notARcloneRemote: return "not rclone:REMOTE:PATH (REMOTE as rclone config names it, then a colon, then a path on it)"
        }
    }
}
