import Foundation
import PurgeKitFoundation

/// The app's folders inside its container (`AppContainer`); without one,
/// where Foundation puts them.
///
/// Foundation on Linux declares only `temporaryDirectory` of these (in
/// FoundationEssentials). PurgeKit's wins in code that imports PurgeKit:
/// Swift drops a declaration that another, with the same signature, in a
/// module that imports the first one's module, shadows.
extension URL {
    /// `Library/Caches`: purgeable on a purgefs mount (the default zones).
    public static var cachesDirectory: URL {
        AppContainer.url(of: .caches) ?? fallback(.cachesDirectory)
    }

    /// `tmp`: purgeable on a purgefs mount.
    public static var temporaryDirectory: URL {
        AppContainer.url(of: .temporary) ?? FoundationAnswers.temporaryDirectory
    }

    public static var documentsDirectory: URL {
        AppContainer.url(of: .documents) ?? fallback(.documentDirectory)
    }

    public static var applicationSupportDirectory: URL {
        AppContainer.url(of: .applicationSupport) ?? fallback(.applicationSupportDirectory)
    }

    public static var libraryDirectory: URL {
        AppContainer.url(of: .library) ?? fallback(.libraryDirectory)
    }

    /// Foundation's folder for `directory`; where Foundation on Linux has
    /// none (`libraryDirectory`), `~/Library`, as on macOS.
    private static func fallback(_ directory: FileManager.SearchPathDirectory) -> URL {
        FoundationAnswers.urls(.default, for: directory, in: .userDomainMask).first
            ?? URL.homeDirectory.appendingPathComponent("Library", isDirectory: true)
    }
}

/// `FileManager.default` answers `temporaryDirectory` and `urls(for:in:)`
/// with these two (`AnsweringFileManager` says why they are not declared
/// again under Foundation's names, as `url(for:in:appropriateFor:create:)` is).
extension FileManager {
    /// `tmp` inside the container, else Foundation's.
    var containerTemporaryDirectory: URL {
        AppContainer.url(of: .temporary) ?? FoundationAnswers.temporaryDirectory(of: self)
    }

    /// For `.cachesDirectory`, `.documentDirectory`, `.libraryDirectory` and
    /// `.applicationSupportDirectory` in the user domain: the container's
    /// folder; anything else is Foundation's answer.
    func containerURLs(for directory: FileManager.SearchPathDirectory, in domainMask: FileManager.SearchPathDomainMask) -> [URL] {
        guard domainMask.contains(.userDomainMask), let folder = AppContainer.Folder(directory),
              let url = AppContainer.url(of: folder)
        else { return FoundationAnswers.urls(self, for: directory, in: domainMask) }
        // The user domain's answer first, as Foundation orders its domains; the other domains are Foundation's.
        let others = domainMask.subtracting(.userDomainMask)
        return [url] + (others.isEmpty ? [] : FoundationAnswers.urls(self, for: directory, in: others))
    }

    /// The container's folder for the directories `urls(for:in:)` answers,
    /// made first when `create` (with its parents); else Foundation's answer.
    public func url(for directory: FileManager.SearchPathDirectory, in domain: FileManager.SearchPathDomainMask,
                    appropriateFor url: URL?, create shouldCreate: Bool) throws -> URL {
        guard domain == .userDomainMask, let folder = AppContainer.Folder(directory), let found = AppContainer.url(of: folder) else {
            return try FoundationAnswers.url(self, for: directory, in: domain, appropriateFor: url, create: shouldCreate)
        }
        if shouldCreate { try createDirectory(at: found, withIntermediateDirectories: true) }
        return found
    }
}
