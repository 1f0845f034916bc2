import PurgeCore

/// The page of a `purgefs run` (`run --html`, `report REPORT.json
/// --html`), drawn from the run's JSON report alone: the timeline of the
/// space figures with the low and high marks and a mark for every scenario
/// step, purge, ENOSPC answer, injected fault and crash (each with its
/// hover text, an SVG `<title>`), the summary `run` prints, and the
/// storage at the start and the end.
public struct TimelinePage {
    /// One mark on the timeline.
    struct Mark: Equatable {
        /// `step`, `purge`, `enospc`, `fault`, `crash`: the CSS class `k-KIND` and its row.
        var kind: String
        var atMilliseconds: UInt64
        /// The hover text.
        var text: String
    }

    struct Series {
        var key: String
        var label: String
        var style: String
    }

    static let series = [
        Series(key: "device_used", label: "Device used", style: "s-device"),
        Series(key: "container_used", label: "Container used", style: "s-container"),
        Series(key: "purgeable", label: "Purgeable", style: "s-purgeable"),
        Series(key: "available", label: "Available", style: "s-available"),
    ]
    static let kinds: [(kind: String, label: String)] = [
        ("step", "scenario step"), ("purge", "purge"), ("enospc", "ENOSPC"), ("fault", "fault injected"), ("crash", "crash"),
    ]
    /// Purges (or faults) of one reason (rule) less than this apart are one mark.
    static let groupingMilliseconds: UInt64 = 250

    let report: JSONValue

    public init(_ report: JSONValue) {
        self.report = report
    }

    /// Whether `report` is a `run` report.
    public static func recognises(_ report: JSONValue) -> Bool {
        report["command"]?.arrayValue != nil && report["duration_ms"] != nil
    }

    var samples: [JSONValue] { report["samples"]?.arrayValue ?? [] }

    // MARK: Marks

    var marks: [Mark] {
        var marks: [Mark] = []
        for step in report["steps"]?.arrayValue ?? [] {
            guard let at = step["at_ms"]?.integerValue else { continue }
            let state = step["state"]?.stringValue ?? "?"
            var text = "line \(step["line"]?.integerValue ?? 0): \(step["step"]?.stringValue ?? "") (\(state))"
            if let detail = step["detail"]?.stringValue, !detail.isEmpty { text += ": " + detail }
            marks.append(Mark(kind: step["action"]?.stringValue == "crash" ? "crash" : "step", atMilliseconds: at, text: text))
        }
        marks += Self.grouped(report["purges"]?.arrayValue ?? [], key: { $0["reason"]?.stringValue ?? "?" }) { key, group in
            // Clamped: a report is a file the user gives (purgefs report), its figures anything up to 2^64-1.
            let bytes = group.reduce(UInt64(0)) { total, purge in
                let (sum, overflow) = total.addingReportingOverflow(purge["bytes"]?.integerValue ?? 0)
                return overflow ? .max : sum
            }
            let paths = group.prefix(8).compactMap { $0["path"]?.stringValue }.joined(separator: ", ")
            return Mark(kind: "purge", atMilliseconds: group[0]["at_ms"]?.integerValue ?? 0,
                        text: "purge (\(key)): \(HumanText.count(UInt64(group.count), "file")), \(HumanText.size(bytes)): "
                            + paths + (group.count > 8 ? ", ..." : ""))
        }
        marks += Self.grouped(report["faults"]?.arrayValue ?? [], key: { "rule \($0["rule"]?.integerValue ?? 0)" }) { key, group in
            let first = group[0]
            return Mark(kind: "fault", atMilliseconds: first["at_ms"]?.integerValue ?? 0,
                        text: "fault \(key): \(first["op"]?.stringValue ?? "?") \(first["path"]?.stringValue ?? "") -> "
                            + "\(first["result"]?.stringValue ?? "")" + (group.count > 1 ? " (\(group.count) times)" : ""))
        }
        // `run` mounts afresh, so the count starts at 0: answers before the first sample are marked too.
        var previous: UInt64 = 0
        for sample in samples {
            let count = sample["enospc"]?.integerValue ?? 0
            if count > previous {
                marks.append(Mark(kind: "enospc", atMilliseconds: sample["at_ms"]?.integerValue ?? 0,
                                  text: "answered ENOSPC: \(HumanText.count(count - previous, "request")) (\(count) since the mount)"))
            }
            previous = count
        }
        return marks.sorted { ($0.atMilliseconds, $0.kind) < ($1.atMilliseconds, $1.kind) }
    }

    /// Consecutive entries of the same key less than `groupingMilliseconds` apart, as one mark each.
    private static func grouped(_ entries: [JSONValue], key: (JSONValue) -> String,
                                mark: (String, [JSONValue]) -> Mark) -> [Mark] {
        var marks: [Mark] = []
        var group: [JSONValue] = []
        var groupKey = ""
        for entry in entries {
            let entryKey = key(entry)
            let at = entry["at_ms"]?.integerValue ?? 0
            if let last = group.last, entryKey == groupKey, at - min(at, last["at_ms"]?.integerValue ?? 0) < groupingMilliseconds {
                group.append(entry)
                continue
            }
            if !group.isEmpty { marks.append(mark(groupKey, group)) }
            group = [entry]
            groupKey = entryKey
        }
        if !group.isEmpty { marks.append(mark(groupKey, group)) }
        return marks
    }

    // MARK: The page

    public var page: HTMLPage {
        let command = (report["command"]?.arrayValue ?? []).compactMap(\.stringValue).joined(separator: " ")
        return HTMLPage(title: "purgefs run: \(command)", body: body(command: command), data: report)
    }

    private func body(command: String) -> String {
        var html = "<div class=\"card\"><h1>purgefs run</h1><div><code>\(HTMLPage.escape(command))</code></div>"
        html += "<div class=\"dim\">\(HTMLPage.escape(ending))</div>"
        if let failure = report["failure"]?.stringValue {
            html += "<p style=\"color:var(--bad)\">failed: \(HTMLPage.escape(failure))</p>"
        }
        html += "</div>"
        html += "<div class=\"card\" id=\"timeline-card\"><h2>Timeline</h2>" + chart + legend + "</div>"
        html += "<div class=\"card\" id=\"summary\"><h2>Summary</h2>" + summaryTable + stepsTable + "</div>"
        for (key, heading, id) in [("usage_start", "Storage when the command started", "storage-start"),
                                   ("usage_end", "Storage when the command ended", "storage-end")] {
            if let usage = report[key], let parsed = UsageReport(json: usage) {
                html += StoragePage(parsed).card(heading: heading, id: id)
            }
        }
        return html
    }

    private var ending: String {
        var text: String
        if let code = report["exit_code"]?.integerValue {
            text = "exited with status \(code)"
        } else if let signal = report["signal"]?.stringValue {
            text = "killed by \(signal)"
        } else {
            text = "did not start"
        }
        if let interrupted = report["interrupted_by"]?.stringValue { text += " (run was interrupted by \(interrupted), passed on)" }
        text += " after \(RunSummary.seconds(report["duration_ms"]?.integerValue ?? 0))"
        if let container = report["container"]?.stringValue { text += "; container \(container)" }
        return text
    }

    private var summaryTable: String {
        func size(_ key: String) -> String { report[key]?.integerValue.map(HumanText.size) ?? "n/a" }
        var purged = "\(size("purged_bytes")) in \(HumanText.count(report["purged_files"]?.integerValue ?? 0, "file"))"
        if case .object(let reasons)? = report["purged_by_reason"], !reasons.isEmpty {
            purged += " (" + reasons.map { reason, figures in
                "\(reason) \(HumanText.size(figures["bytes"]?.integerValue ?? 0)) in "
                    + HumanText.count(figures["files"]?.integerValue ?? 0, "file")
            }.joined(separator: ", ") + ")"
        }
        let rows: [(String, String)] = [
            ("Peak used", size("peak_used")),
            ("Purged", purged),
            ("Answered ENOSPC", report["enospc"]?.integerValue.map { HumanText.count($0, "request") } ?? "n/a"),
            ("Faults injected", report["faults_injected"]?.integerValue.map { String($0) } ?? "n/a"),
            ("Clone savings", size("clone_savings")),
            ("Low mark", size("low")),
            ("High mark", size("high")),
            ("Samples", "\(samples.count) (read every \(report["sampling_ms"]?.integerValue ?? RunTimeline.samplingMilliseconds) ms, kept when a figure changed)"),
        ]
        return "<table class=\"figures\">" + rows.map { "<tr><th>\(HTMLPage.escape($0.0))</th><td>\(HTMLPage.escape($0.1))</td></tr>" }
            .joined() + "</table>"
    }

    private var stepsTable: String {
        let steps = report["steps"]?.arrayValue ?? []
        guard !steps.isEmpty else { return "" }
        var html = "<h2>Scenario</h2><table class=\"steps\"><tr><th>Line</th><th>Step</th><th>State</th><th>At</th><th>Detail</th></tr>"
        for step in steps {
            html += "<tr><td class=\"num\">\(step["line"]?.integerValue ?? 0)</td><td><code>\(HTMLPage.escape(step["step"]?.stringValue ?? ""))</code></td>"
                + "<td>\(HTMLPage.escape(step["state"]?.stringValue ?? ""))</td>"
                + "<td class=\"num\">\(step["at_ms"]?.integerValue.map { HTMLPage.escape(RunSummary.seconds($0)) } ?? "")</td>"
                + "<td>\(HTMLPage.escape(step["detail"]?.stringValue ?? ""))</td></tr>"
        }
        return html + "</table>"
    }

    private var legend: String {
        var html = "<ul class=\"legend\">"
        for series in Self.series {
            html += "<li><svg width=\"18\" height=\"10\"><line x1=\"0\" y1=\"5\" x2=\"18\" y2=\"5\" class=\"series \(series.style)\"/></svg>"
                + "\(HTMLPage.escape(series.label))</li>"
        }
        html += "<li><svg width=\"18\" height=\"10\"><line x1=\"0\" y1=\"5\" x2=\"18\" y2=\"5\" class=\"threshold t-low\"/></svg>low mark</li>"
        html += "<li><svg width=\"18\" height=\"10\"><line x1=\"0\" y1=\"5\" x2=\"18\" y2=\"5\" class=\"threshold t-high\"/></svg>high mark</li>"
        for (kind, label) in Self.kinds {
            html += "<li class=\"k-\(kind)\"><svg width=\"10\" height=\"10\" class=\"mark k-\(kind)\"><path d=\"M0 0 L10 0 L5 9 Z\"/></svg>"
                + "\(HTMLPage.escape(label))</li>"
        }
        return html + "</ul>"
    }

    // MARK: The chart

    static let width = 940.0, height = 380.0
    static let left = 72.0, right = 16.0, top = 64.0, bottom = 28.0
    /// The marks' rows above the plot, one per kind.
    static let rowHeight = 11.0

    var chart: String {
        let samples = self.samples
        let duration = max(report["duration_ms"]?.integerValue ?? 0, samples.last?["at_ms"]?.integerValue ?? 0, 1)
        var top: UInt64 = report["capacity"]?.integerValue ?? 0
        for sample in samples {
            for series in Self.series { top = max(top, sample[series.key]?.integerValue ?? 0) }
        }
        top = max(top, report["high"]?.integerValue ?? 0, 1)
        let plotWidth = Self.width - Self.left - Self.right, plotHeight = Self.height - Self.top - Self.bottom
        func x(_ milliseconds: UInt64) -> Double { Self.left + Double(milliseconds) / Double(duration) * plotWidth }
        func y(_ bytes: UInt64) -> Double { Self.top + plotHeight - Double(bytes) / Double(top) * plotHeight }
        let c = HTMLPage.coordinate

        var svg = "<svg id=\"timeline\" width=\"100%\" style=\"max-width:\(c(Self.width))px\" viewBox=\"0 0 \(c(Self.width)) \(c(Self.height))\" "
            + "role=\"img\" aria-label=\"the run's space over time\" data-duration-ms=\"\(duration)\" data-top=\"\(top)\" "
            + "data-samples=\"\(samples.count)\">"
        // Grid and axes: five bytes lines, time ticks.
        for index in 0...4 {
            let bytes = top / 4 * UInt64(index)
            svg += "<line class=\"gridline\" x1=\"\(c(Self.left))\" x2=\"\(c(Self.width - Self.right))\" y1=\"\(c(y(bytes)))\" y2=\"\(c(y(bytes)))\"/>"
                + "<text x=\"\(c(Self.left - 6))\" y=\"\(c(y(bytes) + 4))\" text-anchor=\"end\">\(HTMLPage.escape(HumanText.size(bytes)))</text>"
        }
        let tick = Self.tickMilliseconds(for: duration)
        var at: UInt64 = 0
        while at <= duration {
            svg += "<line class=\"axis\" x1=\"\(c(x(at)))\" x2=\"\(c(x(at)))\" y1=\"\(c(Self.height - Self.bottom))\" y2=\"\(c(Self.height - Self.bottom + 4))\"/>"
                + "<text x=\"\(c(x(at)))\" y=\"\(c(Self.height - 8))\" text-anchor=\"middle\">\(HTMLPage.escape(Self.time(at)))</text>"
            guard case (let next, false) = at.addingReportingOverflow(tick) else { break }
            at = next
        }
        svg += "<line class=\"axis\" x1=\"\(c(Self.left))\" x2=\"\(c(Self.width - Self.right))\" y1=\"\(c(Self.height - Self.bottom))\" y2=\"\(c(Self.height - Self.bottom))\"/>"
        // The low and high marks: thresholds of available space.
        for (key, style, label) in [("low", "t-low", "low mark"), ("high", "t-high", "high mark")] {
            guard let bytes = report[key]?.integerValue, bytes <= top else { continue }
            svg += "<g class=\"threshold-line\" data-threshold=\"\(key)\" data-bytes=\"\(bytes)\"><title>\(label): available space "
                + "\(key == "low" ? "below" : "up to") \(HTMLPage.escape(HumanText.size(bytes))) \(key == "low" ? "starts" : "ends") a purge</title>"
                + "<line class=\"threshold \(style)\" x1=\"\(c(Self.left))\" x2=\"\(c(Self.width - Self.right))\" y1=\"\(c(y(bytes)))\" y2=\"\(c(y(bytes)))\"/>"
                + "<text x=\"\(c(Self.width - Self.right - 4))\" y=\"\(c(y(bytes) - 3))\" text-anchor=\"end\" class=\"dim\">\(label)</text></g>"
        }
        // The series: steps, each value holding until the next sample.
        for series in Self.series {
            var points: [String] = []
            var last: Double?
            for sample in samples {
                let px = x(sample["at_ms"]?.integerValue ?? 0), py = y(sample[series.key]?.integerValue ?? 0)
                if let last { points.append("\(c(px)),\(c(last))") }
                points.append("\(c(px)),\(c(py))")
                last = py
            }
            if let last { points.append("\(c(x(duration))),\(c(last))") }
            svg += "<polyline class=\"series \(series.style)\" data-series=\"\(series.key)\" data-samples=\"\(samples.count)\" "
                + "points=\"\(points.joined(separator: " "))\"><title>\(HTMLPage.escape(series.label))</title></polyline>"
        }
        // Hover columns: one per sample, saying its figures.
        for (index, sample) in samples.enumerated() {
            let start = sample["at_ms"]?.integerValue ?? 0
            let end = index + 1 < samples.count ? samples[index + 1]["at_ms"]?.integerValue ?? duration : duration
            let figures = Self.series.map { "\($0.label.lowercased()) \(HumanText.size(sample[$0.key]?.integerValue ?? 0))" }
                .joined(separator: ", ")
            svg += "<rect class=\"sample\" data-at-ms=\"\(start)\" x=\"\(c(x(start)))\" y=\"\(c(Self.top))\" "
                + "width=\"\(c(max(x(end) - x(start), 0.5)))\" height=\"\(c(plotHeight))\" fill=\"transparent\">"
                + "<title>\(HTMLPage.escape(Self.time(start))): \(HTMLPage.escape(figures))</title></rect>"
        }
        // The marks, a row per kind above the plot, a dashed line down through it.
        for mark in marks {
            let row = Double(Self.kinds.firstIndex { $0.kind == mark.kind } ?? 0)
            let px = x(mark.atMilliseconds), py = 6 + row * Self.rowHeight
            svg += "<g class=\"mark k-\(mark.kind)\" data-kind=\"\(mark.kind)\" data-at-ms=\"\(mark.atMilliseconds)\">"
                + "<title>\(HTMLPage.escape(Self.time(mark.atMilliseconds))): \(HTMLPage.escape(mark.text))</title>"
                + "<line x1=\"\(c(px))\" x2=\"\(c(px))\" y1=\"\(c(py + 8))\" y2=\"\(c(Self.height - Self.bottom))\"/>"
                + "<path d=\"M\(c(px - 5)) \(c(py)) L\(c(px + 5)) \(c(py)) L\(c(px)) \(c(py + 9)) Z\"/></g>"
        }
        return svg + "</svg>"
    }

    /// A tick every 1, 2 or 5 times a power of ten milliseconds, about ten along the axis.
    static func tickMilliseconds(for duration: UInt64) -> UInt64 {
        var step: UInt64 = 1
        while true {
            for factor: UInt64 in [1, 2, 5] where duration / (step * factor) <= 10 { return step * factor }
            step *= 10
        }
    }

    static func time(_ milliseconds: UInt64) -> String {
        milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : RunSummary.seconds(milliseconds)
    }
}
