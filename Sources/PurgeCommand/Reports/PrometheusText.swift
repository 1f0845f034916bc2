import PurgeCore

/// `purgefs metrics --prometheus`: the current figures in Prometheus's text
/// exposition format (version 0.0.4), for node_exporter's textfile
/// collector: for each metric a `# HELP` and a `# TYPE` line, then one
/// sample line with the `container` label. No timestamps (the collector
/// refuses them).
enum PrometheusText {
    struct Metric: Sendable {
        var name: String
        var type: String
        var help: String
        var value: @Sendable (MetricsSample) -> UInt64
    }

    static let metrics: [Metric] = [
        Metric(name: "purgefs_total_file_size_bytes", type: "gauge",
               help: "Bytes on disk of the container's files, clone-shared data counted once (binary + data + cache folder).",
               value: { $0.totalFileSize }),
        Metric(name: "purgefs_binary_file_size_bytes", type: "gauge",
               help: "Bytes on disk of the app's bundle (bundle=), MetricKit's binary file size.", value: { $0.binaryFileSize }),
        Metric(name: "purgefs_data_file_size_bytes", type: "gauge",
               help: "Bytes on disk outside the bundle and the purgeable zones.", value: { $0.dataFileSize }),
        Metric(name: "purgefs_cache_folder_size_bytes", type: "gauge",
               help: "Bytes on disk in the purgeable zones, MetricKit's cache folder size.", value: { $0.cacheFolderSize }),
        Metric(name: "purgefs_clone_size_bytes", type: "gauge",
               help: "Bytes clones share with other files, stored once.", value: { $0.cloneSize }),
        Metric(name: "purgefs_total_file_count", type: "gauge",
               help: "Regular files in the container.", value: { $0.totalFileCount }),
        Metric(name: "purgefs_binary_file_count", type: "gauge",
               help: "Regular files in the bundle.", value: { $0.binaryFileCount }),
        Metric(name: "purgefs_data_file_count", type: "gauge",
               help: "Regular files outside the bundle and the purgeable zones.", value: { $0.dataFileCount }),
        Metric(name: "purgefs_cache_file_count", type: "gauge",
               help: "Regular files in the purgeable zones.", value: { $0.cacheFileCount }),
        Metric(name: "purgefs_logical_size_bytes", type: "gauge",
               help: "Sum of the sizes of the container's regular files.", value: { $0.logicalSize }),
        Metric(name: "purgefs_purgeable_bytes", type: "gauge",
               help: "Bytes purging could free now.", value: { $0.purgeable }),
        Metric(name: "purgefs_purged_bytes_total", type: "counter",
               help: "Bytes purged since the container was created.", value: { $0.purgedBytesTotal }),
        Metric(name: "purgefs_purged_files_total", type: "counter",
               help: "Files purged since the container was created.", value: { $0.purgedFilesTotal }),
        Metric(name: "purgefs_capacity_bytes", type: "gauge",
               help: "Size of the device (simulated with capacity=, else the backing filesystem's).", value: { $0.capacity }),
        Metric(name: "purgefs_available_bytes", type: "gauge",
               help: "Available space on the device.", value: { $0.available }),
        Metric(name: "purgefs_sample_timestamp_seconds", type: "gauge",
               help: "When these figures were taken, seconds since the epoch.", value: { UInt64(max(0, $0.time)) }),
    ]

    static func text(_ sample: MetricsSample, container: String) -> String {
        let labels = "{container=\"\(escaped(container))\"}"
        var lines: [String] = []
        for metric in metrics {
            lines.append("# HELP \(metric.name) \(metric.help)")
            lines.append("# TYPE \(metric.name) \(metric.type)")
            lines.append("\(metric.name)\(labels) \(metric.value(sample))")
        }
        return lines.joined(separator: "\n")
    }

    /// What only a live mount counts (since it was mounted), not kept in
    /// the history: requests answered `ENOSPC` (`user.purgefs.enospc`).
    static func mountText(enospc: UInt64, container: String) -> String {
        let name = "purgefs_enospc_total"
        return ["# HELP \(name) Requests the mount answered ENOSPC since it was mounted (writes, and anything else that found no room).",
                "# TYPE \(name) counter",
                "\(name){container=\"\(escaped(container))\"} \(enospc)"].joined(separator: "\n")
    }

    /// A label value: backslash, double quote and line feed escaped.
    static func escaped(_ value: String) -> String {
        var result = ""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": result += "\\\\"
            case "\"": result += "\\\""
            case "\n": result += "\\n"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
