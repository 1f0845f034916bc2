import PurgeCore
@testable import PurgeEngines
import PurgeSys
@testable import PurgeCommand

/// An `AttributeAccess` over a table of values instead of a mount: path →
/// attribute (short name) → value. A missing path is `ENOENT`, a missing
/// name `ENODATA`. Writes are recorded, or fail with `writeError`.
final class FakeAttributes: @unchecked Sendable {
    var values: [String: [String: String]]
    var writes: [(path: String, name: String, value: String)] = []
    var writeError: Errno?

    init(_ values: [String: [String: String]]) { self.values = values }

    var access: AttributeAccess {
        AttributeAccess(
            read: { (name, path) throws(Errno) in
                guard let attributes = self.values[path] else { throw Errno.noEntry }
                let short = String(name.dropFirst(PurgeAttribute.prefix.count))
                guard let value = attributes[short] else { throw Errno.noData }
                return Array(value.utf8)
            },
            write: { (name, path, value) throws(Errno) in
                if let error = self.writeError { throw error }
                self.writes.append((path, String(name.dropFirst(PurgeAttribute.prefix.count)), String(decoding: value, as: UTF8.self)))
            })
    }

    static func directory(size: UInt64, files: UInt64 = 1, allocated: UInt64? = nil, purgeable: UInt64 = 0, cloneSavings: UInt64 = 0)
        -> [String: String] {
        ["size": "\(size)", "files": "\(files)", "allocated": "\(allocated ?? size)", "purgeable": "\(purgeable)",
         "clone_savings": "\(cloneSavings)"]
    }

    static func root(size: UInt64, files: UInt64, purgeable: UInt64, capacity: UInt64, external: UInt64, available: UInt64)
        -> [String: String] {
        directory(size: size, files: files, purgeable: purgeable).merging([
            "capacity": "\(capacity)", "external": "\(external)", "available": "\(available)",
            "container_used": "\(capacity - external - available)", "device_used": "\(capacity - available)",
            "available_important": "\(available + purgeable)", "available_opportunistic": "\(available / 2)",
            "purged_bytes": "7", "purged_files": "1",
        ]) { $1 }
    }
}
