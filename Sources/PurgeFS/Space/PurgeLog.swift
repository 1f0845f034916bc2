import Glibc
import PurgeCore
import PurgeSys

/// The durable record of every purge: one JSON object per line in the state
/// directory's `purge.log`, synced after each batch.
///
/// `{"time":1764489600.123,"path":"caches/a.bin","bytes":4096,"size":4000,
///   "last_used":1764480000.5,"reason":"monitor","action":"delete"}`, and
/// `"links_left":N` after it when hard links the container does not hold
/// keep the data (`bytes` is 0 then: no space was freed).
final class PurgeLog: Sendable {
    static let fileName = "purge.log"

    enum Reason: String, Sendable {
        /// The space monitor: available space fell below the low mark.
        case monitor
        /// A write, extension or create that did not fit.
        case write
        /// `purgefs purge` or `setfattr -n user.purgefs.purge`.
        case manual
    }

    struct Record: Sendable {
        var time: Double
        var path: String
        var bytes: UInt64
        var size: UInt64
        /// Seconds since the epoch.
        var lastUsed: Double
        var reason: Reason
        var action: PurgeAction
        /// Links to the data left outside the names purged; 0 when the data went.
        var linksLeft: UInt64 = 0
    }

    private let file: FileDescriptor
    private let lock = ThreadLock()

    init(file: FileDescriptor) {
        self.file = file
    }

    deinit { file.closeQuietly() }

    /// Appends the records and makes them durable.
    func append(_ records: [Record]) {
        guard !records.isEmpty else { return }
        var text = ""
        for record in records { text += Self.line(record) }
        appendLine(text)
    }

    /// Appends ready-made lines (the cloud tier's records) and makes them durable.
    func appendLine(_ text: String) {
        let bytes = Array(text.utf8)
        lock.withLock {
            do {
                _ = try bytes.withUnsafeBytes { buffer in
                    Result { () throws(Errno) -> Int in try file.write(buffer, at: 0) }  // O_APPEND: at the end
                }.get()
                try file.sync(dataOnly: true)
            } catch {
                Diagnostics.note("cannot write the purge log: \(error)")
            }
        }
    }

    static func line(_ record: Record) -> String {
        let action = record.action == .delete ? "delete" : "truncate"
        return "{\"time\":\(seconds(record.time)),\"path\":\(JSONText.quoted(record.path)),\"bytes\":\(record.bytes),"
            + "\"size\":\(record.size),\"last_used\":\(seconds(record.lastUsed)),\"reason\":\"\(record.reason.rawValue)\","
            + "\"action\":\"\(action)\"" + (record.linksLeft > 0 ? ",\"links_left\":\(record.linksLeft)" : "") + "}\n"
    }

    /// Seconds with millisecond precision, as JSON numbers (the fault log's too).
    static func seconds(_ value: Double) -> String {
        let milliseconds = UInt64((value * 1000).rounded())
        let fraction = milliseconds % 1000
        return "\(milliseconds / 1000).\(fraction < 10 ? "00" : fraction < 100 ? "0" : "")\(fraction)"
    }
}
