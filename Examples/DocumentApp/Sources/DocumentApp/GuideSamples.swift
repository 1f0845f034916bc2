// The five code samples of Apple's "Reducing your app's disk usage"
// (developer.apple.com/documentation/xcode/reducing-your-app-s-disk-usage),
// as the guide writes them, each in a function so that a test can run it.
// The changes, all marked "PurgeKit:" below:
// - `import PurgeKit` where the guide has `import MetricKit`, beside
//   `import Foundation` as in every iOS source file;
// - `try` before `evictUbiquitousItem(at:)` and
//   `startDownloadingUbiquitousItem(at:)`: both throw, in Apple's Foundation
//   too, so the guide's lines do not compile anywhere without it;
// - `in` after the download closure's parameters, missing in the guide (a
//   syntax error on every platform);
// - a call where the guide has a comment for the app's own code;
// - the copy of the fifth, which the guide describes without code.
import Foundation
#if canImport(PurgeKit)
import PurgeKit  // PurgeKit: instead of `import MetricKit`
#else
import MetricKit
#endif
#if canImport(FoundationNetworking)
import FoundationNetworking  // URLSession on Linux
#endif

// MARK: 1. Gather metrics on disk usage

public func gatherDiskUsageMetrics(analyze: @escaping @Sendable (TotalFileSizeMetric) -> Void,
                                   track: @escaping @Sendable (TotalFileCountMetric) -> Void) async {
    let manager = MetricManager()

    for await report in manager.metricReports {
        let entry = report.intervalEntries.fullDayEntry
        for value in entry.values {
            switch value {
            case let .totalFileSize(metric):
                // Analyze your app's disk usage.
                analyze(metric)  // PurgeKit: the app's code
                break
            case let .totalFileCount(metric):
                // Track the number of files in your app's container.
                track(metric)  // PurgeKit: the app's code
                break
            @unknown default:
                break
            }
        }
    }
}

// MARK: 2. Use purgeable folders for recoverable content

public func makeCacheDownloadTask(for cacheURL: URL) -> URLSessionDownloadTask {
    let cacheDownloadTask = URLSession.shared.downloadTask(with: cacheURL) {
        fileURL, response, error in  // PurgeKit: `in` added

        // Check for download errors and handle them.

        guard let temporaryURL = fileURL else { return }
        do {
            let destinationURL = URL.cachesDirectory.appendingPathComponent(temporaryURL.lastPathComponent)
            try FileManager.default.moveItem(at: temporaryURL, to: destinationURL)
        }
        catch {
            // Handle the error.
        }
    }
    return cacheDownloadTask
}

// MARK: 3. Manage local copies of iCloud files

public func removeLocalDocument(at localURL: URL) throws {
    let resources = try localURL.resourceValues(forKeys: [.ubiquitousItemIsUploadedKey])
    guard resources.ubiquitousItemIsUploaded == true else { return }
    try FileManager.default.evictUbiquitousItem(at: localURL)  // PurgeKit: `try` added
}

// MARK: 4. ...and retrieve them

public func fetchRemoteDocument(for localURL: URL) throws {
    let resources = try localURL.resourceValues(forKeys: [.ubiquitousItemIsUploadedKey])
    guard resources.ubiquitousItemIsUploaded != true else { return }
    try FileManager.default.startDownloadingUbiquitousItem(at: localURL)  // PurgeKit: `try` added
}

/// What the guide's prose says `fetchRemoteDocument(for:)` does, bringing an
/// evicted document back. As written, the sample returns early for one:
/// an evicted document's data is in iCloud, so `ubiquitousItemIsUploaded`
/// is true (on Apple's Foundation as on a purgefs mount), and only a
/// document not uploaded yet (whose data is here anyway) gets the call.
/// The smallest change: ask whether the data is here instead.
public func fetchRemoteDocumentIfEvicted(for localURL: URL) throws {
    let resources = try localURL.resourceValues(forKeys: [.ubiquitousItemDownloadingStatusKey])
    guard resources.ubiquitousItemDownloadingStatus == .notDownloaded else { return }
    try FileManager.default.startDownloadingUbiquitousItem(at: localURL)
}

// MARK: 5. Copy files by creating clones

public func copyDocument(at source: URL, to destination: URL) throws {
    try FileManager.default.copyItem(at: source, to: destination)
}
