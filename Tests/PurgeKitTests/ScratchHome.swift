import Foundation
import Glibc

/// A fresh directory under TMPDIR for a suite that sets the container
/// variables (the process's environment): neither is set when it is made;
/// both are unset, and the directory removed, when it goes.
final class ScratchHome {
    let url: URL

    init(_ label: String) throws {
        unsetenv("PURGEFS_CONTAINER")
        unsetenv("PURGEFS_MOUNT")
        url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("\(label)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit {
        unsetenv("PURGEFS_CONTAINER")
        unsetenv("PURGEFS_MOUNT")
        try? FileManager.default.removeItem(at: url)
    }
}
