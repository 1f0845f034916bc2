import PurgeCore

/// The page of a `purgefs explore` report: the crash states as a strip
/// along the operations (a column per crash point, a cell per variant of
/// it, green passed, red failed), the counts, and each failure's details
/// (`<details>`), which a click on its failed cell opens.
public struct ExplorePage {
    let report: JSONValue

    public init(_ report: JSONValue) {
        self.report = report
    }

    /// Whether `report` is an explore report: `states` and a `results` list.
    public static func recognises(_ report: JSONValue) -> Bool {
        report["states"]?.integerValue != nil && report["results"]?.arrayValue != nil
    }

    struct State: Equatable {
        var point: UInt64
        var variant: String
        var passed: Bool
    }

    var states: [State] {
        (report["results"]?.arrayValue ?? []).map {
            State(point: $0["point"]?.integerValue ?? 0, variant: Self.text($0["variant"]), passed: $0["passed"]?.boolValue ?? false)
        }
    }

    /// A variant may be written as a string or a number.
    static func text(_ value: JSONValue?) -> String {
        switch value {
        case .string(let text)?: return text
        case .number(let text)?: return text
        case .bool(let value)?: return value ? "true" : "false"
        default: return ""
        }
    }

    /// The element id of a failure's details.
    static func anchor(point: UInt64, variant: String) -> String {
        "failure-\(point)-" + String(variant.map { $0.isLetter || $0.isNumber ? $0 : "_" })
    }

    public var page: HTMLPage {
        HTMLPage(title: "purgefs explore", body: body, data: report, script: Self.script)
    }

    /// Opens the failure a failed cell names, and shows it.
    static let script = """
        document.querySelectorAll('.state.failed').forEach(function (cell) {
          cell.addEventListener('click', function () {
            var details = document.getElementById(cell.getAttribute('data-target'));
            if (details) { details.open = true; details.scrollIntoView(); }
          });
        });
        """

    private var body: String {
        func count(_ key: String) -> String {
            switch report[key] {
            case .bool(let value)?: return value ? "yes" : "no"
            case .number(let text)?: return text
            default: return "n/a"
            }
        }
        var html = "<div class=\"card\"><h1>purgefs explore</h1><table class=\"figures\">"
        for (label, key) in [("States", "states"), ("Passed", "passed"), ("Failed", "failed"), ("Sampled", "sampled"),
                             ("Operations", "operations")] {
            html += "<tr><th>\(label)</th><td id=\"count-\(key)\">\(HTMLPage.escape(count(key)))</td></tr>"
        }
        html += "</table></div>"
        html += run
        html += "<div class=\"card\"><h2>States along the operations</h2>" + strip + "</div>"
        let failures = report["failures"]?.arrayValue ?? []
        html += "<div class=\"card\" id=\"failures\"><h2>Failures</h2>"
        if failures.isEmpty { html += "<p class=\"dim\">none</p>" }
        for failure in failures {
            let point = failure["point"]?.integerValue ?? 0, variant = Self.text(failure["variant"])
            let lost = (failure["lost"]?.arrayValue ?? []).compactMap(\.stringValue)
            // A report lists the first items of a state's loss and counts them all (lostCount).
            let lostCount = max(lost.count, failure["lostCount"]?.integerValue.map { Int($0) } ?? 0)
            let more = lostCount > lost.count ? "<li>and \(lostCount - lost.count) more</li>" : ""
            html += "<details class=\"failure\" id=\"\(HTMLPage.escape(Self.anchor(point: point, variant: variant)))\">"
                + "<summary>state \(point)\(variant.isEmpty ? "" : " (\(HTMLPage.escape(variant)))"): after "
                + "<code>\(HTMLPage.escape(Self.text(failure["operation"])))</code>, "
                + "\(lostCount) lost</summary><table>"
            html += "<tr><th>Operation</th><td><code>\(HTMLPage.escape(Self.text(failure["operation"])))</code></td></tr>"
            html += "<tr><th>Last durable</th><td><code>\(HTMLPage.escape(Self.text(failure["lastDurable"])))</code></td></tr>"
            html += "<tr><th>Lost</th><td>" + (lost.isEmpty ? "nothing" : "<ul>" + lost.map { "<li><code>\(HTMLPage.escape($0))</code></li>" }.joined() + more + "</ul>") + "</td></tr>"
            if let group = failure["group"], group != .null {
                html += "<tr><th>Group</th><td>\(HTMLPage.escape(Self.text(group)))</td></tr>"
            }
            if let kind = failure["kind"]?.stringValue {
                html += "<tr><th>Kind</th><td>\(kind == "lost-acknowledgment" ? "lost acknowledgment" : HTMLPage.escape(kind))</td></tr>"
            }
            html += "<tr><th>Checker's stderr</th><td><pre>\(HTMLPage.escape(failure["stderr"]?.stringValue ?? ""))</pre></td></tr>"
            html += "</table></details>"
        }
        return html + "</div>"
    }

    /// What was explored, and how: the command, the checker, the golden
    /// view's command, the container and the model(s), as the report says.
    private var run: String {
        var rows: [(String, String)] = []
        if let command = report["command"]?.arrayValue {
            rows.append(("Command", command.map { Self.text($0) }.joined(separator: " ")))
        }
        for (label, key) in [("Checker", "check"), ("Golden view", "golden"), ("Container", "container"), ("Model", "model")] {
            if let value = report[key]?.stringValue, !value.isEmpty { rows.append((label, value)) }
        }
        if let models = report["models"]?.arrayValue, !models.isEmpty {
            rows.append(("Models", models.map { Self.text($0) }.joined(separator: ", ")))
        }
        guard !rows.isEmpty else { return "" }
        return "<div class=\"card\" id=\"run\"><h2>The run</h2><table class=\"figures\">"
            + rows.map { "<tr><th>\($0.0)</th><td><code>\(HTMLPage.escape($0.1))</code></td></tr>" }.joined()
            + "</table></div>"
    }

    /// The kind of crash state a variant is, one row (or more) of the strip
    /// each: `names-kept` (written `""` by older reports), `names-lost`,
    /// `torn` (every `torn-N`), `reordered` (every `reordered-N`).
    static func family(_ variant: String) -> String {
        if variant.isEmpty { return "names-kept" }
        for prefix in ["torn", "reordered"] where variant.hasPrefix(prefix + "-") { return prefix }
        return variant
    }

    static let families = ["names-kept", "names-lost", "torn", "reordered"]

    static let width = 940.0, left = 96.0, right = 16.0, cellHeight = 18.0

    /// A column per crash point from 0 to the operations, a cell per state at that point.
    private var strip: String {
        let states = self.states
        let operations = max(report["operations"]?.integerValue ?? 0, states.map(\.point).max() ?? 0)
        var variants: [UInt64: [State]] = [:]
        for state in states { variants[state.point, default: []].append(state) }
        // A band of rows per family, as many as its most states at one point.
        var depth: [String: Int] = [:]
        for list in variants.values {
            var here: [String: Int] = [:]
            for state in list { here[Self.family(state.variant), default: 0] += 1 }
            depth.merge(here) { max($0, $1) }
        }
        let order = Self.families.filter { depth[$0] != nil } + depth.keys.filter { !Self.families.contains($0) }.sorted()
        var band: [String: Int] = [:]
        var rows = 0
        for family in order {
            band[family] = rows
            rows += depth[family] ?? 0
        }
        rows = max(rows, 1)
        let height = Double(rows) * Self.cellHeight + 30
        let plotWidth = Self.width - Self.left - Self.right
        // In Double: a report's "operations" may be anything up to 2^64-1.
        let column = plotWidth / (Double(operations) + 1)
        let c = HTMLPage.coordinate
        var svg = "<svg id=\"strip\" width=\"100%\" style=\"max-width:\(c(Self.width))px\" viewBox=\"0 0 \(c(Self.width)) \(c(height))\" "
            + "role=\"img\" aria-label=\"crash states along the operations\" data-states=\"\(states.count)\">"
        for family in order {
            let y = Double(band[family] ?? 0) * Self.cellHeight + Self.cellHeight * 0.7
            svg += "<text class=\"row-label\" x=\"0\" y=\"\(c(y))\">\(HTMLPage.escape(family))</text>"
        }
        for (point, list) in variants.sorted(by: { $0.key < $1.key }) {
            var placed: [String: Int] = [:]
            for state in list {
                let family = Self.family(state.variant)
                let row = (band[family] ?? 0) + placed[family, default: 0]
                placed[family, default: 0] += 1
                let outcome = state.passed ? "passed" : "failed"
                var cell = "<rect class=\"state \(outcome)\" data-point=\"\(point)\" data-variant=\"\(HTMLPage.escape(state.variant))\" "
                if !state.passed { cell += "data-target=\"\(HTMLPage.escape(Self.anchor(point: point, variant: state.variant)))\" " }
                cell += "x=\"\(c(Self.left + Double(point) * column))\" y=\"\(c(Double(row) * Self.cellHeight))\" "
                    + "width=\"\(c(max(column, 1)))\" height=\"\(c(Self.cellHeight))\"><title>state \(point)"
                    + "\(state.variant.isEmpty ? "" : " (\(HTMLPage.escape(state.variant)))"): \(outcome)"
                    + "\(state.passed ? "" : ", click for the details")</title></rect>"
                svg += cell
            }
        }
        let axis = Double(rows) * Self.cellHeight
        let tick = TimelinePage.tickMilliseconds(for: max(operations, 1))
        var at: UInt64 = 0
        while at <= operations {
            let x = Self.left + (Double(at) + 0.5) * column
            svg += "<text x=\"\(c(x))\" y=\"\(c(axis + 16))\" text-anchor=\"middle\">\(at)</text>"
            guard case (let next, false) = at.addingReportingOverflow(tick) else { break }
            at = next
        }
        svg += "<text x=\"0\" y=\"\(c(axis + 16))\" class=\"dim\">op</text>"
        return svg + "</svg>"
    }
}
