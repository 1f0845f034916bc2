import Foundation
import PurgeCore
import PurgeSys
import Synchronization

/// iCloud's calls, answered by the mount's cloud tier (`cloud=`, the
/// `ubiquitous=` zones): a file in a ubiquitous zone is a ubiquitous item.
/// Foundation on Linux declares none of these.
extension FileManager {
    /// Drops the local data of an uploaded file, keeping it listed with its
    /// size (`user.purgefs.evict`). Errors as Foundation's: no such file is
    /// `NSFileNoSuchFileError`; a file that is not a ubiquitous item (off a
    /// mount, outside the zones, a directory) is `NSUbiquitousFileUnavailableError`;
    /// one not uploaded yet is `NSFileWriteUnknownError` with `EBUSY`
    /// underneath, and nothing is removed.
    public func evictUbiquitousItem(at url: URL) throws {
        let path = try Self.ubiquitousPath(url)
        do {
            try PurgeMount.set(.evict, of: path, to: "1")
        } catch {
            throw FileError.cocoa(error, path: path, .write)
        }
    }

    /// Starts downloading an evicted file (`user.purgefs.download`); a file
    /// whose data is here already is left as it is. Errors as
    /// `evictUbiquitousItem(at:)`'s.
    public func startDownloadingUbiquitousItem(at url: URL) throws {
        let path = try Self.ubiquitousPath(url)
        do {
            try PurgeMount.set(.download, of: path, to: "1")
        } catch {
            throw FileError.cocoa(error, path: path, .write)
        }
        DownloadRequests.shared.insert(path)
    }

    /// Whether the file is in a ubiquitous zone of a purgefs mount; false
    /// off a mount and for a file that is not there.
    public func isUbiquitousItem(at url: URL) -> Bool {
        guard url.isFileURL else { return false }
        return (try? PurgeMount.flag(.ubiquitous, of: url.path)) == true
    }

    /// The path of a ubiquitous item, or Foundation's error for it.
    private static func ubiquitousPath(_ url: URL) throws -> String {
        let path = url.path
        guard url.isFileURL else { throw FileError.cocoa(.ubiquitousFileUnavailable, path: path) }
        let ubiquitous: Bool?
        do {
            ubiquitous = try PurgeMount.flag(.ubiquitous, of: path)
        } catch where error == .noEntry {
            throw FileError.cocoa(.noEntry, path: path, .write)
        } catch {
            // Off a mount the filesystem has no such attribute (ENODATA, EOPNOTSUPP): not iCloud's.
            throw FileError.cocoa(.ubiquitousFileUnavailable, path: path, underlying: error)
        }
        guard ubiquitous == true else { throw FileError.cocoa(.ubiquitousFileUnavailable, path: path) }
        return path
    }
}

/// Files this process asked to download, until their data is here: what
/// `ubiquitousItemIsDownloading` reports (the mount does not say whether a
/// transfer is under way).
final class DownloadRequests: Sendable {
    static let shared = DownloadRequests()
    private let paths = Mutex<Set<String>>([])

    func insert(_ path: String) { paths.withLock { _ = $0.insert(path) } }

    /// Whether a download of `path` was asked for and its data is not here yet.
    func isDownloading(_ path: String, notDownloaded: Bool) -> Bool {
        paths.withLock { paths in
            guard paths.contains(path) else { return false }
            if !notDownloaded { paths.remove(path) }
            return notDownloaded
        }
    }
}
