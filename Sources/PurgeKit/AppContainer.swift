import Foundation
import PurgeSys

/// The app's container, as iOS gives each app one: `PURGEFS_CONTAINER` when
/// set, else the mount `purgefs run` gives the command (`PURGEFS_MOUNT`),
/// else none (then every folder is where Foundation puts it).
///
/// Read at every call, never cached, so a test may set the variable between
/// two calls.
public enum AppContainer {
    /// The container's root, or nil when neither variable names an absolute path.
    public static var root: URL? {
        for name in ["PURGEFS_CONTAINER", "PURGEFS_MOUNT"] {
            if let value = CurrentProcess.environmentValue(name), value.hasPrefix("/") {
                return URL(fileURLWithPath: value, isDirectory: true)
            }
        }
        return nil
    }

    /// The folders of an iOS app's container, relative to its root.
    public enum Folder: String, CaseIterable, Sendable {
        case documents = "Documents"
        case library = "Library"
        case caches = "Library/Caches"
        case applicationSupport = "Library/Application Support"
        case temporary = "tmp"

        /// The `FileManager.SearchPathDirectory` that names it, if any.
        init?(_ directory: FileManager.SearchPathDirectory) {
            switch directory {
            case .documentDirectory: self = .documents
            case .libraryDirectory: self = .library
            case .cachesDirectory: self = .caches
            case .applicationSupportDirectory: self = .applicationSupport
            default: return nil
            }
        }

        /// Whether iOS makes it with the container (Application Support is
        /// the app's to make, with `url(for:in:appropriateFor:create: true)`).
        var isStanding: Bool { self != .applicationSupport }
    }

    /// The folder inside the container, made when it is a standing one and
    /// missing; nil without a container.
    public static func url(of folder: Folder) -> URL? {
        guard let root else { return nil }
        let url = root.appendingPathComponent(folder.rawValue, isDirectory: true)
        if folder.isStanding && !Paths.exists(url.path) {
            // As on iOS the folder is there; should it fail, the app's own call on it says why.
            try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        }
        return url
    }
}
