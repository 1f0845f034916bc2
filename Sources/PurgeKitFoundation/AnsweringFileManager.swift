import Foundation

/// What PurgeKit answers for `FileManager`'s own methods that it declares
/// again (`FileManager+Clones`, `URL+Container` in PurgeKit).
public protocol FileManagerAnswers: Sendable {
    func copyItem(_ manager: FileManager, at source: URL, to destination: URL) throws
    func temporaryDirectory(of manager: FileManager) -> URL
    func urls(_ manager: FileManager, for directory: FileManager.SearchPathDirectory,
              in domainMask: FileManager.SearchPathDomainMask) -> [URL]
}

/// The `FileManager` that PurgeKit's `FileManager.default` returns: its
/// overrides hand the calls PurgeKit answers to `answers`.
///
/// Why a subclass: in a file that imports Foundation as well as PurgeKit,
/// Swift sees both modules' `copyItem(at:to:)` directly and shadows neither
/// (a declaration shadows another only when every import path to the other
/// goes through its own module), and with equal signatures it ranks neither
/// above the other: "ambiguous use". Through `FileManager.default` it can
/// rank them: PurgeKit's `default` has this subclass's type, a subtype of
/// Foundation's, and a member of a subclass is more specialized than the
/// member it overrides, so the call is PurgeKit's whatever the file imports.
/// Being overrides, they also answer when the manager is passed on as a
/// plain `FileManager` (dynamic dispatch).
///
/// PurgeKit declares no extension method under these three names: the
/// solver orders a subclass's method and its superclass's only by their
/// parameters, so one would tie with the override (and a method declared in
/// an extension cannot be overridden). The class lives here, in a module
/// that declares none of Foundation's names, so that `override` finds
/// Foundation's methods alone.
open class AnsweringFileManager: FileManager, @unchecked Sendable {
    private let answers: any FileManagerAnswers

    public init(answers: any FileManagerAnswers) {
        self.answers = answers
        super.init()
    }

    open override func copyItem(at srcURL: URL, to dstURL: URL) throws {
        try answers.copyItem(self, at: srcURL, to: dstURL)
    }

    open override var temporaryDirectory: URL { answers.temporaryDirectory(of: self) }

    open override func urls(for directory: FileManager.SearchPathDirectory,
                            in domainMask: FileManager.SearchPathDomainMask) -> [URL] {
        answers.urls(self, for: directory, in: domainMask)
    }

    // Foundation's own answers for this manager, for `FoundationAnswers`
    // (calling the overridden method would come back to `answers`).

    func foundationCopyItem(at source: URL, to destination: URL) throws {
        try super.copyItem(at: source, to: destination)
    }

    var foundationTemporaryDirectory: URL { super.temporaryDirectory }

    func foundationURLs(for directory: FileManager.SearchPathDirectory,
                        in domainMask: FileManager.SearchPathDomainMask) -> [URL] {
        super.urls(for: directory, in: domainMask)
    }
}
