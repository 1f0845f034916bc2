import Foundation

/// A fresh app container (an empty home with Library/Caches and Documents) in the temporary directory.
struct ScratchHome {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("cacheapp-\(UUID().uuidString)")
        for directory in ["Library/Caches", "Documents"] {
            try FileManager.default.createDirectory(at: url.appendingPathComponent(directory), withIntermediateDirectories: true)
        }
    }

    func remove() {
        try? FileManager.default.removeItem(at: url)
    }
}
