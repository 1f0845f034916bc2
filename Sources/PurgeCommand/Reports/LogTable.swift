import PurgeCore
import PurgeEngines
/// The readable form of the purge log, built a line at a time so a long
/// log is printed as it is read.
struct LogTable {
    let now: Double
    private(set) var entries: UInt64 = 0
    private(set) var freed: UInt64 = 0
    private(set) var unreadable = 0
    /// Of `entries`: evictions of cloud documents, and cloud transfers
    /// (failed uploads or downloads), which free nothing.
    private(set) var evicted: UInt64 = 0
    private(set) var transfers: UInt64 = 0

    init(now: Double) { self.now = now }

    static let header = row(time: "TIME", reason: "REASON", action: "ACTION", size: "SIZE", lastUsed: "LAST USED", path: "PATH")

    /// The text to print for one line of the log: the header before the
    /// first entry, then the entry's row; `nil` for a blank or unreadable line.
    mutating func add(_ line: String) -> String? {
        if line.allSatisfy({ $0 == " " || $0 == "\r" }) { return nil }
        guard let entry = PurgeLogEntry(line: line) else {
            unreadable += 1
            return nil
        }
        entries += 1
        freed += entry.bytes
        switch entry.action {
        case "delete", "truncate": break
        case "evict": evicted += 1
        default: transfers += 1
        }
        let row = Self.row(entry, now: now)
        return entries == 1 ? Self.header + "\n" + row : row
    }

    static func row(_ entry: PurgeLogEntry, now: Double) -> String {
        row(time: HumanText.localTime(entry.time), reason: entry.reason, action: entry.action,
            size: HumanText.size(entry.size), lastUsed: HumanText.age(of: entry.lastUsed, now: now), path: printable(entry.path))
    }

    private static func row(time: String, reason: String, action: String, size: String, lastUsed: String, path: String) -> String {
        HumanText.left(time, 19) + "  " + HumanText.left(reason, 7) + "  " + HumanText.left(action, 8) + "  "
            + HumanText.right(size, 10) + "  " + HumanText.right(lastUsed, 9) + "  " + path
    }

    /// The closing line: a total, or that nothing was purged.
    var footer: String {
        let purged = entries - evicted - transfers
        var text = entries == 0 ? LogCommand.emptyText
            : evicted == 0 && transfers == 0 ? "\(HumanText.count(entries, "file")) purged, \(HumanText.size(freed)) freed."
            : "\(HumanText.count(purged, "file")) purged, \(evicted) evicted, \(HumanText.size(freed)) freed"
                + (transfers > 0 ? "; \(HumanText.count(transfers, "cloud transfer")) failed." : ".")
        if unreadable > 0 { text += " (\(unreadable) unreadable \(unreadable == 1 ? "line" : "lines") skipped.)" }
        return text
    }

    /// A path on one line: control characters escaped as in JSON.
    static func printable(_ path: String) -> String {
        guard path.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else { return path }
        let quoted = JSONValue.quoted(path)
        return String(quoted.dropFirst().dropLast())
    }
}
