import Foundation
#if canImport(PurgeKit)
import PurgeKit
#endif

/// A small document app's storage layer, written as on iOS: documents in
/// `Documents` (synced with iCloud), thumbnails in `Library/Caches` (made
/// again when purged), an index in Application Support kept out of backups;
/// under pressure it evicts the uploaded documents nobody has open.
public struct DocumentLibrary: Sendable {
    public init() {}

    public var documents: URL { URL.documentsDirectory }
    public var thumbnails: URL { URL.cachesDirectory.appendingPathComponent("Thumbnails", isDirectory: true) }

    /// Saves a document and its thumbnail; refuses when the device cannot
    /// take it even after purging (Apple's advice: check the capacity for
    /// important usage before saving what the person made).
    public func save(_ data: Data, as name: String, thumbnail: Data) throws {
        let values = try documents.resourceValues(forKeys: [.volumeAvailableCapacityForImportantUsageKey])
        if let available = values.volumeAvailableCapacityForImportantUsage, available < Int64(data.count + thumbnail.count) {
            throw CocoaError(.fileWriteOutOfSpace)
        }
        try data.write(to: documents.appendingPathComponent(name))
        try FileManager.default.createDirectory(at: thumbnails, withIntermediateDirectories: true)
        try thumbnail.write(to: thumbnails.appendingPathComponent(name + ".thumb"))
    }

    /// The document's bytes, downloading it first when it was evicted.
    public func open(_ name: String) throws -> Data {
        let url = documents.appendingPathComponent(name)
        try fetchRemoteDocumentIfEvicted(for: url)
        return try Data(contentsOf: url)
    }

    /// The thumbnail, or nil when the system purged it (then the app makes it again).
    public func thumbnail(of name: String) -> Data? {
        try? Data(contentsOf: thumbnails.appendingPathComponent(name + ".thumb"))
    }

    /// A copy of a document, a clone on APFS and on a purgefs mount.
    public func duplicate(_ name: String, as copy: String) throws {
        try copyDocument(at: documents.appendingPathComponent(name), to: documents.appendingPathComponent(copy))
    }

    /// Evicts every uploaded document but those in `keep`; returns the names evicted.
    public func freeUpSpace(keeping keep: Set<String> = []) throws -> [String] {
        var evicted: [String] = []
        let names = try FileManager.default.contentsOfDirectory(atPath: documents.path).sorted()
        for name in names where !keep.contains(name) {
            let url = documents.appendingPathComponent(name)
            let before = try url.resourceValues(forKeys: [.ubiquitousItemDownloadingStatusKey]).ubiquitousItemDownloadingStatus
            try removeLocalDocument(at: url)
            let after = try url.resourceValues(forKeys: [.ubiquitousItemDownloadingStatusKey]).ubiquitousItemDownloadingStatus
            if before != .notDownloaded && after == .notDownloaded { evicted.append(name) }
        }
        return evicted
    }

    /// The search index: rebuilt from the documents, so kept out of backups.
    public func writeIndex(_ data: Data) throws -> URL {
        let folder = URL.applicationSupportDirectory
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var url = folder.appendingPathComponent("index.db")
        try data.write(to: url)
        try excludeFromBackup(&url)
        return url
    }
}
