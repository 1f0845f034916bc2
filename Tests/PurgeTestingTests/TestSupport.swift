import Foundation
import PurgeTesting

/// The purgefs these tests drive: PURGEFS_BIN (scripts/test sets it), else the one built beside this test bundle.
func builtBinary() throws -> PurgefsBinary {
    if ProcessInfo.processInfo.environment["PURGEFS_BIN"] != nil { return try PurgefsBinary.locate() }
    let bundle = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    return PurgefsBinary(path: (bundle as NSString).deletingLastPathComponent + "/purgefs")
}

/// A fresh directory with an empty app container in it (Documents, Library/Caches, tmp); removed by `remove()`.
struct ScratchContainer {
    let base: URL
    var container: URL { base.appendingPathComponent("app") }

    init() throws {
        base = FileManager.default.temporaryDirectory.appendingPathComponent("purgetesting-\(UUID().uuidString)")
        for directory in ["Documents", "Library/Caches", "tmp"] {
            try FileManager.default.createDirectory(at: base.appendingPathComponent("app/" + directory), withIntermediateDirectories: true)
        }
    }

    /// Removes the directory unless something is still mounted in it.
    func remove() {
        guard !isMounted(base.path) else { return }
        try? FileManager.default.removeItem(at: base)
    }
}

/// Whether a mount point at or below `path` is in /proc/self/mounts.
func isMounted(_ path: String) -> Bool {
    let table = (try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8)) ?? ""
    return table.split(separator: "\n").contains { line in
        let fields = line.split(separator: " ")
        return fields.count > 1 && (fields[1] == path || fields[1].hasPrefix(path + "/"))
    }
}

/// Writes `bytes` bytes at `path`, with an mtime `age` seconds ago (the purge order of files not yet used through the mount).
func writeFile(_ path: String, bytes: Int, age: TimeInterval = 0) throws {
    try Data(repeating: 0x42, count: bytes).write(to: URL(fileURLWithPath: path))
    if age > 0 { try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -age)], ofItemAtPath: path) }
}
