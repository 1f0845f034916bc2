import Foundation
import PurgeKitFoundation

/// The app's folders inside its container (`AppContainer`); without one,
/// where Foundation puts them.
///
/// Foundation on Linux declares only `temporaryDirectory` of these (in
/// FoundationEssentials). PurgeKit's wins in a file that imports PurgeKit
/// alone: Swift drops a declaration that another, with the same signature,
/// in a module that imports the first one's module, shadows. In a file that
/// imports Foundation too `URL.temporaryDirectory` is "ambiguous use" (two
/// static properties of one type tie on every rule Swift has);
/// `FileManager.default.temporaryDirectory` is the same folder there.
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
/// again under Foundation's names). `url(for:in:appropriateFor:create:)` is
/// Foundation's own: it asks `self.urls(for:in:)`, which on
/// `FileManager.default` is the override, and makes the folder when
/// `create` (0700 in the user domain), so it answers the container's folder
/// in any file without a declaration of PurgeKit's to tie with Foundation's.
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
}
