import Foundation

/// What Foundation itself answers, without PurgeKit.
///
/// PurgeKit declares `URL.cachesDirectory`, `URL.resourceValues(forKeys:)`,
/// `FileManager.copyItem(at:to:)` and others with Foundation's own
/// signatures; a module that imports Foundation and declares one of them
/// shadows Foundation's in its own code and in code that imports it. So
/// inside PurgeKit every such name means PurgeKit's, and Foundation's answer
/// (off a mount, and for what a mount does not change) is asked from here, a
/// module that declares none of them.
public enum FoundationAnswers {
    public static var temporaryDirectory: URL { URL.temporaryDirectory }

    public static func temporaryDirectory(of manager: FileManager) -> URL {
        (manager as? AnsweringFileManager)?.foundationTemporaryDirectory ?? manager.temporaryDirectory
    }

    public static func urls(_ manager: FileManager, for directory: FileManager.SearchPathDirectory,
                            in domainMask: FileManager.SearchPathDomainMask) -> [URL] {
        if let answering = manager as? AnsweringFileManager { return answering.foundationURLs(for: directory, in: domainMask) }
        return manager.urls(for: directory, in: domainMask)
    }

    public static func copyItem(_ manager: FileManager, at source: URL, to destination: URL) throws {
        if let answering = manager as? AnsweringFileManager { return try answering.foundationCopyItem(at: source, to: destination) }
        try manager.copyItem(at: source, to: destination)
    }

    public static func resourceValues(of url: URL, forKeys keys: Set<URLResourceKey>) throws -> URLResourceValues {
        try url.resourceValues(forKeys: keys)
    }

    public static func setResourceValues(_ values: URLResourceValues, of url: inout URL) throws {
        try url.setResourceValues(values)
    }
}
