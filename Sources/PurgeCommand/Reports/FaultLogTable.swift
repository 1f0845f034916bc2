import PurgeCore
import PurgeEngines
/// The readable form of the fault log (`purgefs log --faults`), a line at a time.
struct FaultLogTable {
    private(set) var entries: UInt64 = 0
    private(set) var unreadable = 0

    static let header = row(time: "TIME", rule: "RULE", op: "OP", pid: "PID", result: "RESULT", path: "PATH")

    /// The header before the first entry, then the entry's row; nil for a blank or unreadable line.
    mutating func add(_ line: String) -> String? {
        if line.allSatisfy({ $0 == " " || $0 == "\r" }) { return nil }
        guard let value = JSONValue(parsing: line), let time = value["time"]?.doubleValue, let rule = value["rule"]?.integerValue,
              let op = value["op"]?.stringValue, let path = value["path"]?.stringValue,
              let result = value["result"]?.stringValue
        else {
            unreadable += 1
            return nil
        }
        entries += 1
        let pid = value["pid"]?.integerValue.map(String.init) ?? "?"
        let row = Self.row(time: HumanText.localTime(time), rule: String(rule), op: op, pid: pid, result: result,
                           path: LogTable.printable(path))
        return entries == 1 ? Self.header + "\n" + row : row
    }

    private static func row(time: String, rule: String, op: String, pid: String, result: String, path: String) -> String {
        HumanText.left(time, 19) + "  " + HumanText.right(rule, 4) + "  " + HumanText.left(op, 9) + "  "
            + HumanText.right(pid, 7) + "  " + HumanText.left(result, 24) + "  " + path
    }

    var footer: String {
        var text = entries == 0 ? FaultLogTable.emptyText : "\(HumanText.count(entries, "fault")) injected."
        if unreadable > 0 { text += " (\(unreadable) unreadable \(unreadable == 1 ? "line" : "lines") skipped.)" }
        return text
    }

    static let emptyText = "No fault has been injected."
}
