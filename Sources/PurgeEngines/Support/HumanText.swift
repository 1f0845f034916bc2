import PurgeCore
import PurgeSys

/// How commands show times, ages and sizes to people.
public enum HumanText {
    /// `2025-11-30 14:03:09` in the local time zone; the epoch number when
    /// the C library cannot convert it.
    public static func localTime(_ secondsSinceEpoch: Double) -> String {
        guard secondsSinceEpoch.isFinite, abs(secondsSinceEpoch) < 1e15,
              let time = LocalTime(secondsSinceEpoch: Int64(secondsSinceEpoch.rounded(.down)))
        else { return String(secondsSinceEpoch) }
        return dateTime(time)
    }

    /// `YYYY-MM-DD HH:MM:SS`.
    static func dateTime(_ time: LocalTime) -> String {
        "\(padded(time.year, 4))-\(padded(time.month))-\(padded(time.day)) "
            + "\(padded(time.hour)):\(padded(time.minute)):\(padded(time.second))"
    }

    /// How long before `now` a moment was: `12s ago`, `5m ago`, `3h ago`,
    /// `2d ago` (whole units, rounded down); `now` for under a second or a
    /// moment a little in the future; `never` for 0 (not known).
    public static func age(of moment: Double, now: Double) -> String {
        guard moment > 0, moment.isFinite, now.isFinite else { return "never" }
        let seconds = now - moment
        if seconds < 1 { return "now" }
        if seconds < 60 { return "\(Int(seconds))s ago" }
        if seconds < 3600 { return "\(Int(seconds / 60))m ago" }
        if seconds < 86400 { return "\(Int(seconds / 3600))h ago" }
        if seconds < 86400 * 1000 { return "\(Int(seconds / 86400))d ago" }
        return "\(Int(seconds / (86400 * 365)))y ago"
    }

    /// Human units: `1.5 GiB`.
    public static func size(_ bytes: UInt64) -> String { ByteSize.format(bytes) }

    /// `1 file`, `3 files`.
    public static func count(_ value: UInt64, _ noun: String) -> String { "\(value) \(noun)\(value == 1 ? "" : "s")" }

    /// `text` padded with spaces on the left to `width` (right-aligned).
    public static func right(_ text: String, _ width: Int) -> String {
        String(repeating: " ", count: max(0, width - text.count)) + text
    }

    /// `text` padded with spaces on the right to `width`.
    public static func left(_ text: String, _ width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - text.count))
    }

    private static func padded(_ value: Int, _ width: Int = 2) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }
}
