import Foundation
import PurgeKitFoundation

extension FileManager {
    /// A manager whose `copyItem(at:to:)`, `temporaryDirectory` and
    /// `urls(for:in:)` are PurgeKit's, in a file that imports Foundation too
    /// (`AnsweringFileManager` says how), and wherever it is passed on as a
    /// plain `FileManager`. Every other method is Foundation's.
    public static var `default`: AnsweringFileManager { PurgeKitFileManager.shared }
}

/// The one manager `FileManager.default` returns, as Foundation has one.
enum PurgeKitFileManager {
    static let shared = AnsweringFileManager(answers: Answers())

    /// PurgeKit's methods (`FileManager+Clones`, `URL+Container`), which
    /// fall back to Foundation's through `FoundationAnswers`.
    struct Answers: FileManagerAnswers {
        func copyItem(_ manager: FileManager, at source: URL, to destination: URL) throws {
            try manager.cloningCopyItem(at: source, to: destination)
        }

        func temporaryDirectory(of manager: FileManager) -> URL { manager.containerTemporaryDirectory }

        func urls(_ manager: FileManager, for directory: FileManager.SearchPathDirectory,
                  in domainMask: FileManager.SearchPathDomainMask) -> [URL] {
            manager.containerURLs(for: directory, in: domainMask)
        }
    }
}
