import PurgeCore
import PurgeEngines

/// `purgefs metrics` without `--json`: a table per UTC day, one row per hour
/// (the hour's last figures, its purges added up), headed by the day's
/// full-day figures and a sparkline of the total size through the day.
enum MetricsTable {
    static let columns = ["time", "binary", "data", "caches", "clone", "files", "purgeable", "purged", "available"]

    static func text(container: String, days: [MetricsDay], lastDays: Int, now: Int64) -> String {
        guard !days.isEmpty else {
            return "No metrics samples for \(container) in the last \(HumanText.count(UInt64(lastDays), "day"))."
        }
        var blocks: [String] = ["Metrics of \(container) (times in UTC; sizes on disk, clone-shared data once)"]
        for day in days { blocks.append(block(day, now: now)) }
        return blocks.joined(separator: "\n\n")
    }

    static func block(_ day: MetricsDay, now: Int64) -> String {
        let full = day.fullDay
        let state = day.isComplete(now: now) ? "" : ", so far"
        var lines = ["\(UTCCalendar.dateText(day.start))\(state): \(HumanText.size(full.totalFileSize)) in "
                     + "\(HumanText.count(full.totalFileCount, "file")), \(HumanText.size(full.purgedBytes)) purged  "
                     + sparkline(day.entries.map(\.totalFileSize))]
        let rows = [columns] + day.hourly.map(row)
        let widths = columns.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        for row in rows {
            lines.append("  " + row.indices.map { column in
                column == 0 ? HumanText.left(row[column], widths[column]) : HumanText.right(row[column], widths[column])
            }.joined(separator: "  "))
        }
        return lines.joined(separator: "\n")
    }

    static func row(_ sample: MetricsSample) -> [String] {
        [UTCCalendar.timeText(sample.time), HumanText.size(sample.binaryFileSize), HumanText.size(sample.dataFileSize),
         HumanText.size(sample.cacheFolderSize), HumanText.size(sample.cloneSize), String(sample.totalFileCount),
         HumanText.size(sample.purgeable), HumanText.size(sample.purgedBytes), HumanText.size(sample.available)]
    }

    static let bars: [Character] = ["▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"]

    /// At most `width` bars, each the last value of its share of `values`,
    /// scaled from the smallest (▁) to the largest (█); flat values are all ▁.
    static func sparkline(_ values: [UInt64], width: Int = 24) -> String {
        guard !values.isEmpty else { return "" }
        let points = values.count <= width
            ? values
            : (1...width).map { values[($0 * values.count) / width - 1] }
        let low = points.min()!, high = points.max()!
        guard high > low else { return String(repeating: bars[0], count: points.count) }
        return String(points.map { value in
            bars[Int((Double(value - low) / Double(high - low) * Double(bars.count - 1)).rounded())]
        })
    }
}
