import PurgeCore

extension PrometheusText {
    /// The fault rules' counters of a live mount: per rule, the calls it
    /// matched and the times it fired, labelled with its ID and its rule
    /// line. Empty when there are no rules (a metric without samples is
    /// left out, as the format allows).
    static func faultText(_ rules: [FaultListing], container: String) -> String {
        guard !rules.isEmpty else { return "" }
        let counters: [(name: String, help: String, value: (FaultListing) -> UInt64)] = [
            ("purgefs_fault_rule_matched_total", "Calls that matched the fault rule since it was added.", { $0.matched }),
            ("purgefs_fault_rule_fired_total", "Times the fault rule acted (failed, delayed or shortened a call).", { $0.fired }),
        ]
        var lines: [String] = []
        for counter in counters {
            lines.append("# HELP \(counter.name) \(counter.help)")
            lines.append("# TYPE \(counter.name) counter")
            for rule in rules {
                let labels = "{container=\"\(escaped(container))\",rule=\"\(rule.id)\",spec=\"\(escaped(rule.rule.line))\"}"
                lines.append("\(counter.name)\(labels) \(counter.value(rule))")
            }
        }
        return lines.joined(separator: "\n")
    }
}
