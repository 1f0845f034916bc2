import Glibc

/// A moment as the local clock on the wall shows it, in the time zone of
/// this process (`TZ`, else `/etc/localtime`).
public struct LocalTime: Equatable, Sendable {
    public var year: Int
    /// 1 to 12.
    public var month: Int
    /// 1 to 31.
    public var day: Int
    public var hour: Int
    public var minute: Int
    public var second: Int

    public init(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) {
        self.year = year
        self.month = month
        self.day = day
        self.hour = hour
        self.minute = minute
        self.second = second
    }

    /// The local time of `seconds` since the epoch (the fraction dropped);
    /// `nil` for a moment the C library cannot represent.
    /// Wraps `tzset(3)` and `localtime_r(3)`.
    public init?(secondsSinceEpoch seconds: Int64) {
        tzset()
        var time = time_t(seconds)
        var parts = tm()
        guard localtime_r(&time, &parts) != nil else { return nil }
        self.init(year: Int(parts.tm_year) + 1900, month: Int(parts.tm_mon) + 1, day: Int(parts.tm_mday),
                  hour: Int(parts.tm_hour), minute: Int(parts.tm_min), second: Int(parts.tm_sec))
    }
}
