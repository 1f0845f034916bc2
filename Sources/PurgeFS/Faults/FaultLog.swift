import Glibc
import PurgeCore
import PurgeSys

/// The record of every fault injected: one JSON object per line in the state
/// directory's `faults.log`, appended as each injection happens (not synced:
/// a test reads it while mounted, and a lost tail after a power loss is no
/// harm).
///
/// `{"time":1764489600.123,"rule":2,"op":"write","path":"Documents/a.db",
///   "pid":4711,"action":"EIO","result":"EIO"}`
final class FaultLog: Sendable {
    static let fileName = "faults.log"

    struct Record: Sendable {
        var time: Double
        var rule: Int
        /// The request's operation, as rules name it.
        var operation: FaultOperation
        var path: String
        var pid: Int32
        var action: FaultAction
        /// What the caller got: the errno's name, `delayed 250ms`, `wrote 100 of 200 bytes`.
        var result: String
    }

    private let file: FileDescriptor?

    init(file: FileDescriptor?) {
        self.file = file
    }

    deinit { file?.closeQuietly() }

    /// Appends one record: a single `O_APPEND` write, so concurrent records never interleave.
    func append(_ record: Record) {
        guard let file else { return }
        let bytes = Array(Self.line(record).utf8)
        do throws(Errno) {
            _ = try bytes.withUnsafeBytes { buffer in
                Result { () throws(Errno) -> Int in try file.write(buffer, at: 0) }  // O_APPEND: at the end
            }.get()
        } catch {
            Diagnostics.note("cannot write the fault log: \(error)")
        }
    }

    static func line(_ record: Record) -> String {
        return "{\"time\":\(PurgeLog.seconds(record.time)),\"rule\":\(record.rule),\"op\":\(JSONText.quoted(record.operation.rawValue)),"
            + "\"path\":\(JSONText.quoted(record.path)),\"pid\":\(record.pid),"
            + "\"action\":\(JSONText.quoted(record.action.summary)),\"result\":\(JSONText.quoted(record.result))}\n"
    }
}
