/// A duration in whole seconds, read from text such as `30s`, `15m`, `1h`,
/// `1d` or plain seconds (`90`).
///
/// A decimal part is allowed (`1.5h` = 5400 s) and rounded down to whole
/// seconds; the result must be at least one second, since an interval of
/// zero would sample in a busy loop.
public struct DurationSeconds: Equatable, Comparable, Hashable, Sendable, CustomStringConvertible {
    public var seconds: UInt64

    public init(seconds: UInt64) { self.seconds = seconds }

    public init(parsing text: String) throws(ValueError) {
        if text.isEmpty { throw .empty }
        if text.first == "-" { throw .negative }
        guard let (number, rest) = try DecimalNumber.leading(Substring(text)) else { throw .notADuration }
        let scale: UInt64
        switch rest {
        case "", "s": scale = 1
        case "m": scale = 60
        case "h": scale = 3600
        case "d": scale = 86400
        default: throw .notADuration
        }
        let value = try number.scaled(by: scale)
        guard value >= 1 else { throw .lessThanOneSecond }
        seconds = value
    }

    public static func < (lhs: DurationSeconds, rhs: DurationSeconds) -> Bool { lhs.seconds < rhs.seconds }

    /// The largest whole unit that divides the value: `1h`, `15m`, `90s`, `2d`.
    public var description: String {
        if seconds != 0, seconds % 86400 == 0 { return "\(seconds / 86400)d" }
        if seconds != 0, seconds % 3600 == 0 { return "\(seconds / 3600)h" }
        if seconds != 0, seconds % 60 == 0 { return "\(seconds / 60)m" }
        return "\(seconds)s"
    }
}
