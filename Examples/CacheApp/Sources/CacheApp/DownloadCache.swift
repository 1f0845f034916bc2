import Foundation

/// The app's cache layer: files downloaded once and kept in
/// `Library/Caches/downloads`, where the system may purge them when space
/// runs low. The app must cope with both: a purged file is downloaded
/// again, and a cache that cannot be written (the disk is full) still
/// returns the data, uncached.
public final class DownloadCache: Sendable {
    public let directory: URL
    private let downloader: any Downloader

    /// `container`: the app's container (its home).
    public init(container: URL, downloader: any Downloader) throws {
        directory = container.appendingPathComponent("Library/Caches/downloads")
        self.downloader = downloader
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    /// What happened on the last `data(for:)`, for the app's diagnostics.
    public enum Outcome: Equatable, Sendable {
        case hit, downloadedAndStored, downloadedNotStored
    }

    /// The file for `key`: from the cache, else downloaded and stored.
    public func data(for key: String) throws -> (Data, Outcome) {
        let file = directory.appendingPathComponent(key)
        if let cached = try? Data(contentsOf: file) { return (cached, .hit) }
        let data = try downloader.download(key)
        do {
            // Written aside and renamed: a reader never sees half a file, and a failed write leaves nothing.
            try data.write(to: file, options: .atomic)
            return (data, .downloadedAndStored)
        } catch {
            try? FileManager.default.removeItem(at: file)
            return (data, .downloadedNotStored)
        }
    }

    /// The keys cached now.
    public func cachedKeys() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
    }
}
