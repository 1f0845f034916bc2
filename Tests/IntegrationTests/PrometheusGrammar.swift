import Foundation

/// A strict check of Prometheus's text exposition format (0.0.4), as
/// promtool checks it, plus what node_exporter's textfile collector needs:
/// metric names match `[a-zA-Z_:][a-zA-Z0-9_:]*` and label names
/// `[a-zA-Z_][a-zA-Z0-9_]*`; label values are quoted with only `\\`, `\"`
/// and `\n` escapes; `# HELP` and `# TYPE` come once per family and before
/// its samples; every family has a TYPE; a family's samples are together;
/// one sample per line, a value that parses as a float and no timestamp; no
/// series twice; counters end in `_total`; the text ends with a newline.
enum PrometheusGrammar {
    struct Sample: Equatable {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    /// The samples, or a list of what is wrong.
    static func parse(_ text: String) -> (samples: [Sample], problems: [String]) {
        var problems: [String] = []
        var samples: [Sample] = []
        var help: Set<String> = []
        var types: [String: String] = [:]
        var finished: Set<String> = []
        var current: String?
        var series: Set<String> = []
        if !text.hasSuffix("\n") { problems.append("the text does not end with a newline") }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast(text.hasSuffix("\n") ? 1 : 0)
        for (number, lineText) in lines.enumerated() {
            let line = String(lineText)
            let at = "line \(number + 1) '\(line)'"
            if line.isEmpty { problems.append("\(at): empty line"); continue }
            if line.hasPrefix("#") {
                let parts = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
                guard parts.count >= 3, parts[0] == "#", parts[1] == "HELP" || parts[1] == "TYPE" else { continue }  // a comment
                let name = parts[2]
                guard isMetricName(name) else { problems.append("\(at): bad metric name"); continue }
                if parts[1] == "HELP" {
                    if help.contains(name) { problems.append("\(at): second HELP for \(name)") }
                    if parts.count < 4 || parts[3].isEmpty { problems.append("\(at): empty HELP") }
                    help.insert(name)
                } else {
                    if types[name] != nil { problems.append("\(at): second TYPE for \(name)") }
                    let type = parts.count == 4 ? parts[3] : ""
                    guard ["counter", "gauge", "histogram", "summary", "untyped"].contains(type) else {
                        problems.append("\(at): unknown type '\(type)'"); continue
                    }
                    if type == "counter" && !name.hasSuffix("_total") { problems.append("\(at): a counter not ending in _total") }
                    types[name] = type
                }
                if finished.contains(name) || current == name && samples.last?.name == name {
                    problems.append("\(at): HELP or TYPE after samples of \(name)")
                }
                continue
            }
            guard let sample = parseSample(line, problems: &problems, at: at) else { continue }
            if types[sample.name] == nil { problems.append("\(at): sample without a TYPE before it") }
            if current != sample.name {
                if let current { finished.insert(current) }
                if finished.contains(sample.name) { problems.append("\(at): samples of \(sample.name) are not together") }
                current = sample.name
            }
            let key = sample.name + "|" + sample.labels.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
            if !series.insert(key).inserted { problems.append("\(at): the same series twice") }
            samples.append(sample)
        }
        return (samples, problems)
    }

    static func isMetricName(_ name: String) -> Bool {
        name.range(of: "^[a-zA-Z_:][a-zA-Z0-9_:]*$", options: .regularExpression) != nil
    }

    static func isLabelName(_ name: String) -> Bool {
        name.range(of: "^[a-zA-Z_][a-zA-Z0-9_]*$", options: .regularExpression) != nil && !name.hasPrefix("__")
    }

    private static func parseSample(_ line: String, problems: inout [String], at: String) -> Sample? {
        let scalars = Array(line.unicodeScalars)
        var index = 0
        var name = ""
        while index < scalars.count, scalars[index] != "{", scalars[index] != " " {
            name.unicodeScalars.append(scalars[index]); index += 1
        }
        guard isMetricName(name) else { problems.append("\(at): bad metric name '\(name)'"); return nil }
        var labels: [String: String] = [:]
        if index < scalars.count, scalars[index] == "{" {
            index += 1
            while true {
                guard index < scalars.count else { problems.append("\(at): unterminated labels"); return nil }
                if scalars[index] == "}" { index += 1; break }
                var label = ""
                while index < scalars.count, scalars[index] != "=" { label.unicodeScalars.append(scalars[index]); index += 1 }
                guard isLabelName(label) else { problems.append("\(at): bad label name '\(label)'"); return nil }
                guard index + 1 < scalars.count, scalars[index] == "=", scalars[index + 1] == "\"" else {
                    problems.append("\(at): label \(label) without a quoted value"); return nil
                }
                index += 2
                var value = ""
                while true {
                    guard index < scalars.count else { problems.append("\(at): unterminated label value"); return nil }
                    let scalar = scalars[index]
                    index += 1
                    if scalar == "\"" { break }
                    if scalar == "\\" {
                        guard index < scalars.count else { problems.append("\(at): dangling escape"); return nil }
                        switch scalars[index] {
                        case "\\": value += "\\"
                        case "\"": value += "\""
                        case "n": value += "\n"
                        default: problems.append("\(at): bad escape \\\(scalars[index])"); return nil
                        }
                        index += 1
                    } else {
                        value.unicodeScalars.append(scalar)
                    }
                }
                if labels.updateValue(value, forKey: label) != nil { problems.append("\(at): label \(label) twice") }
                guard index < scalars.count else { problems.append("\(at): unterminated labels"); return nil }
                if scalars[index] == "," { index += 1 } else if scalars[index] != "}" {
                    problems.append("\(at): expected , or } after a label"); return nil
                }
            }
        }
        guard index < scalars.count, scalars[index] == " " else { problems.append("\(at): no space before the value"); return nil }
        let rest = String(String.UnicodeScalarView(scalars[(index + 1)...]))
        let fields = rest.split(separator: " ", omittingEmptySubsequences: false)
        guard fields.count == 1 else { problems.append("\(at): more than a value (a timestamp?)"); return nil }
        let text = String(fields[0])
        let value: Double?
        switch text {
        case "NaN": value = .nan
        case "+Inf": value = .infinity
        case "-Inf": value = -.infinity
        default: value = text.range(of: "^[-+]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][-+]?[0-9]+)?$", options: .regularExpression) != nil ? Double(text) : nil
        }
        guard let value else { problems.append("\(at): value '\(text)' is not a number"); return nil }
        return Sample(name: name, labels: labels, value: value)
    }
}
