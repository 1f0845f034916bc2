/// Calendar arithmetic on seconds since the epoch, in UTC, without a time
/// zone database: the metrics' days and hours, and their ISO 8601 names.
public enum UTCCalendar {
    /// The start of the bucket of `length` seconds holding `time` (floor
    /// division, so times before the epoch fall into the right bucket too).
    public static func floor(_ time: Int64, to length: Int64) -> Int64 {
        let remainder = time % length
        return remainder < 0 ? time - remainder - length : time - remainder
    }

    /// The start of the UTC day holding `time`.
    public static func day(of time: Int64) -> Int64 { floor(time, to: 86400) }

    /// Year, month (1–12) and day (1–31) of the UTC day holding `time`
    /// (Howard Hinnant's `civil_from_days`).
    public static func date(of time: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let days = floor(time, to: 86400) / 86400 + 719_468
        let era = (days >= 0 ? days : days - 146_096) / 146_097
        let dayOfEra = days - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// `2025-06-01`.
    public static func dateText(_ time: Int64) -> String {
        let date = date(of: time)
        return "\(padded(date.year, 4))-\(padded(date.month))-\(padded(date.day))"
    }

    /// `14:03:09` within the UTC day.
    public static func timeText(_ time: Int64) -> String {
        let seconds = time - day(of: time)
        return "\(padded(seconds / 3600)):\(padded(seconds / 60 % 60)):\(padded(seconds % 60))"
    }

    /// `2025-06-01T14:03:09Z`.
    public static func iso8601(_ time: Int64) -> String { dateText(time) + "T" + timeText(time) + "Z" }

    private static func padded(_ value: Int64, _ width: Int = 2) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }
}
