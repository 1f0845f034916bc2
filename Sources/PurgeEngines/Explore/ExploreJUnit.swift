import PurgeCore

/// `--junit FILE`: the report as JUnit XML, the format `swift test
/// --xunit-output` and pytest's `--junitxml` write, so a CI dashboard
/// shows it. One `testsuite`; a failing `testcase` per failure group
/// (`ExploreGroups`), its `failure` carrying the message and its smallest
/// state; one passing `testcase` for the states that passed; a failing one
/// for the command itself when it did not end well.
enum ExploreJUnit {
    static func xml(_ report: ExploreReport) -> String {
        let grouped = report.grouped
        var cases: [String] = []
        let suite = "purgefs explore " + report.command.joined(separator: " ")
        let model = report.models.map(\.rawValue).joined(separator: ",")
        for group in grouped.groups {
            let smallest = report.results[group.smallest]
            let kind = group.kind.rawValue
            let name = "group \(group.number) (\(kind)): \(group.operation), after \(group.lastDurable?.text ?? "nothing durable")"
            var body = ["smallest state: \(smallest.id)", "states: \(group.members.count)", "operation: \(smallest.failure?.operation ?? "")",
                        "last durable: \(group.lastDurable?.text ?? "none")"]
            if let failure = smallest.failure { body.append("lost: " + ExploreReport.lostText(failure)) }
            if report.models.count > 1 { body.append("models: " + CrashFilesystemModel.sentence(report.groupModels(group))) }
            body.append("message: \(group.message)")
            body.append("replay: purgefs explore --replay REPORT \(smallest.id) DIR")
            cases.append("    <testcase classname=\"\(escape("explore." + model))\" name=\"\(escape(name))\" time=\"0\">\n"
                + "      <failure message=\"\(escape(group.message.isEmpty ? "(no stderr)" : group.message))\" type=\"\(kind)\">"
                + escape(body.joined(separator: "\n")) + "</failure>\n    </testcase>")
        }
        if report.commandFailed {
            cases.append("    <testcase classname=\"\(escape("explore." + model))\" name=\"the command\" time=\"0\">\n"
                + "      <failure message=\"\(escape("the command " + report.commandEnded))\" type=\"command\">"
                + escape(report.commandStderr) + "</failure>\n    </testcase>")
        }
        let sampled = report.sampled ? ", sampled from \(report.allStates)" : ""
        cases.append("    <testcase classname=\"\(escape("explore." + model))\" name=\"\(escape("\(report.passed) of \(report.states) crash states passed\(sampled)"))\" time=\"0\"/>")
        let failures = grouped.groups.count + (report.commandFailed ? 1 : 0)
        let time = ExploreReport.format(report.seconds)
        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <testsuites name="purgefs explore" tests="\(cases.count)" failures="\(failures)" errors="0" time="\(time)">
              <testsuite name="\(escape(suite))" tests="\(cases.count)" failures="\(failures)" errors="0" skipped="0" time="\(time)">
            \(cases.joined(separator: "\n"))
              </testsuite>
            </testsuites>

            """
    }

    /// Text as XML 1.0 takes it in an attribute or element: the five
    /// entities, tab, newline and carriage return as character references
    /// (kept in attributes), and any other control character, which XML 1.0
    /// cannot hold, as U+FFFD.
    static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&apos;"
            case "\t": escaped += "&#9;"
            case "\n": escaped += "&#10;"
            case "\r": escaped += "&#13;"
            default:
                if scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF {
                    escaped += "\u{FFFD}"
                } else {
                    escaped.unicodeScalars.append(scalar)
                }
            }
        }
        return escaped
    }
}
