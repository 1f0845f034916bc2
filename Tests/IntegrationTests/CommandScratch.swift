import Foundation
import Glibc
import PurgeCore
import PurgeSys

/// A fresh directory for a test that runs a purgefs command which makes its
/// own temporary directories (`demo`, `run`): `environment` points TMPDIR
/// there, so what the command leaves behind (a mount, a directory) shows up
/// in it and cannot be confused with anyone else's. `remove()` takes down
/// mounts left there first, and removes nothing while one stays.
struct CommandScratch {
    let path: String

    /// `/tmp/PREFIX-XXXXXX`, canonical.
    init(prefix: String) throws {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else { throw SubprocessError("mkdtemp failed") }
        path = try Paths.canonical(String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    /// This process's environment with TMPDIR pointing here.
    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["TMPDIR"] = path
        return environment
    }

    /// A command that failed to clean up: its mounts go lazily, then the directory.
    func remove() {
        for mount in MountTable.mounts(under: path).reversed() {
            _ = try? Subprocess.run(["fusermount3", "-u", "-z", mount.mountPoint], timeout: 10)
        }
        if MountTable.mounts(under: path).isEmpty { try? FileManager.default.removeItem(atPath: path) }
    }
}
