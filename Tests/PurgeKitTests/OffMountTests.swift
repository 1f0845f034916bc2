import Glibc
@testable import PurgeKit
import PurgeCore
import Testing

/// Off a purgefs mount every PurgeKit call is Foundation's answer or a clear
/// error (the on-mount behaviour is Examples/DocumentApp's tests).
/// Serialized: the container is the process's environment.
@Suite(.serialized) final class OffMountTests {
    let home: ScratchHome
    var scratch: URL { home.url }

    init() throws {
        home = try ScratchHome("purgekit")
    }

    @Test func withoutAContainerTheFoldersAreFoundations() {
        #expect(URL.cachesDirectory == FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first)
        #expect(URL.temporaryDirectory.standardizedFileURL.path == URL(fileURLWithPath: NSTemporaryDirectory()).standardizedFileURL.path)
        #expect(URL.libraryDirectory.lastPathComponent == "Library")
    }

    @Test func aContainerHoldsTheFolders() throws {
        setenv("PURGEFS_CONTAINER", scratch.path, 1)
        #expect(URL.cachesDirectory.path == scratch.path + "/Library/Caches")
        #expect(URL.documentsDirectory.path == scratch.path + "/Documents")
        #expect(URL.temporaryDirectory.path == scratch.path + "/tmp")
        #expect(FileManager.default.temporaryDirectory.path == scratch.path + "/tmp")
        #expect(FileManager.default.fileExists(atPath: scratch.path + "/Library/Caches"), "standing folders exist, as on iOS")
        #expect(FileManager.default.urls(for: .documentDirectory, in: .userDomainMask).map(\.path) == [scratch.path + "/Documents"])
        let support = try FileManager.default.url(for: .applicationSupportDirectory, in: .userDomainMask, appropriateFor: nil, create: true)
        #expect(support.path == scratch.path + "/Library/Application Support")
        #expect(FileManager.default.fileExists(atPath: support.path))
    }

    /// `purgefs run` sets `PURGEFS_MOUNT`: the container without
    /// `PURGEFS_CONTAINER`, which wins when both are set; a relative path is none.
    @Test func theMountPurgefsRunGivesIsTheContainerUnlessOneIsNamed() throws {
        setenv("PURGEFS_MOUNT", scratch.path, 1)
        #expect(URL.cachesDirectory.path == scratch.path + "/Library/Caches")
        let named = scratch.appendingPathComponent("named")
        setenv("PURGEFS_CONTAINER", named.path, 1)
        #expect(URL.documentsDirectory.path == named.path + "/Documents")
        setenv("PURGEFS_CONTAINER", "relative/app", 1)
        #expect(URL.documentsDirectory.path == scratch.path + "/Documents", "a relative PURGEFS_CONTAINER names no container")
    }

    @Test func resourceValuesOffAMountAreFoundationsAndTheUsagesAreWhatIsAvailable() throws {
        let file = scratch.appendingPathComponent("a.txt")
        try Data("a".utf8).write(to: file)
        let values = try file.resourceValues(forKeys: [.ubiquitousItemIsUploadedKey, .isUbiquitousItemKey, .ubiquitousItemDownloadingStatusKey,
                                                       .isExcludedFromBackupKey, .volumeAvailableCapacityKey,
                                                       .volumeAvailableCapacityForImportantUsageKey, .volumeAvailableCapacityForOpportunisticUsageKey])
        #expect(values.ubiquitousItemIsUploaded == nil)
        #expect(values.isUbiquitousItem == nil)
        #expect(values.ubiquitousItemDownloadingStatus == nil)
        #expect(values.isExcludedFromBackup == nil)
        let available = try #require(values.volumeAvailableCapacity)
        // Each figure is read on its own: allow for other writers on this machine in between.
        #expect(abs(Double(try #require(values.volumeAvailableCapacityForImportantUsage)) - Double(available)) <= 64 * 1024 * 1024)
        #expect(values.volumeAvailableCapacityForOpportunisticUsage != nil)
        // Foundation on Linux fetches nothing for the ubiquitous key, so a missing file is no error there;
        // a key it does fetch is its NSFileReadNoSuchFileError (PurgeKit's, on a mount, for either).
        let missing = scratch.appendingPathComponent("missing")
        #expect(try missing.resourceValues(forKeys: [.ubiquitousItemIsUploadedKey]).ubiquitousItemIsUploaded == nil)
        expectCocoaError(.fileReadNoSuchFile) { _ = try missing.resourceValues(forKeys: [.fileSizeKey, .ubiquitousItemIsUploadedKey]) }
    }

    @Test func ubiquitousCallsOffAMountAreClearErrors() throws {
        let file = scratch.appendingPathComponent("doc.txt")
        try Data("d".utf8).write(to: file)
        #expect(!FileManager.default.isUbiquitousItem(at: file))
        expectCocoaError(.ubiquitousFileUnavailable) { _ = try FileManager.default.evictUbiquitousItem(at: file) }
        expectCocoaError(.ubiquitousFileUnavailable) { _ = try FileManager.default.startDownloadingUbiquitousItem(at: file) }
        expectCocoaError(.fileNoSuchFile) { _ = try FileManager.default.evictUbiquitousItem(at: scratch.appendingPathComponent("missing")) }
        #expect(try Data(contentsOf: file) == Data("d".utf8), "nothing was removed")
    }

    @Test func copyOffAMountIsFoundationsCopy() throws {
        let source = scratch.appendingPathComponent("s.bin"), destination = scratch.appendingPathComponent("d.bin")
        try Data(repeating: 3, count: 10_000).write(to: source)
        try FileManager.default.copyItem(at: source, to: destination)
        #expect(try Data(contentsOf: destination) == Data(contentsOf: source))
        expectCocoaError(.fileWriteFileExists) { _ = try FileManager.default.copyItem(at: source, to: destination) }
    }

    @Test func theMetricReportsEndAtOnceOffAMount() async {
        var count = 0
        for await _ in MetricManager().metricReports { count += 1 }
        #expect(count == 0)
    }

    @Test func foundationsResourceValuesLayoutIsTheOnePurgeKitWrites() throws {
        #expect(ResourceValuesLayout.matches)
        let base = try scratch.resourceValues(forKeys: [.isDirectoryKey])
        let merged = ResourceValuesLayout.merging(base, [.ubiquitousItemIsUploadedKey: true,
                                                         .ubiquitousItemDownloadingStatusKey: URLUbiquitousItemDownloadingStatus.notDownloaded])
        #expect(merged.isDirectory == true, "Foundation's own values stay")
        #expect(merged.ubiquitousItemIsUploaded == true)
        #expect(merged.ubiquitousItemDownloadingStatus == .notDownloaded)
    }

    @Test func aReportIsCodableAndItsFullDayEntryIsTheLongest() throws {
        var sample = MetricsSample(start: 1_748_736_000 + 60, time: 1_748_736_000 + 3600)
        sample.dataFileSize = 1000
        sample.cacheFolderSize = 200
        sample.dataFileCount = 4
        sample.cacheFileCount = 1
        sample.capacity = 10_000
        sample.available = 4_000
        let report = MetricReport(MetricsDay(start: 1_748_736_000, entries: [sample]), now: 1_748_736_000 + 7200)
        #expect(report.intervalEntries.count == 2)
        #expect(report.intervalEntries.fullDayEntry.duration.converted(to: .seconds).value == 86400)
        #expect(report.timeRange.duration == 7200, "a day under way ends now")
        let decoded = try JSONDecoder().decode(MetricReport.self, from: JSONEncoder().encode(report))
        #expect(decoded == report)
        let empty = #"{"timeRange":{"start":0,"duration":60},"intervalEntries":[]}"#
        #expect(throws: DecodingError.self, "a report without entries is refused, not left to trap in fullDayEntry") {
            try JSONDecoder().decode(MetricReport.self, from: Data(empty.utf8))
        }
        guard case .totalFileSize(let size) = report.intervalEntries.fullDayEntry.values[0],
              case .totalFileCount(let count) = report.intervalEntries.fullDayEntry.values[1],
              case .totalDiskSpaceCapacity(let disk) = report.intervalEntries.fullDayEntry.values[2]
        else { Issue.record("values: \(report.intervalEntries.fullDayEntry.values)"); return }
        #expect(size.dataFileSize.converted(to: .bytes).value == 1200, "MetricKit's data size holds the cache folder")
        #expect(size.cacheFolderSize.converted(to: .bytes).value == 200)
        #expect(count.dataFileCount == 5)
        #expect(disk.spaceUsed.converted(to: .bytes).value == 6000)
    }
}

/// Expects `body` to throw Foundation's `CocoaError` with `code`.
func expectCocoaError(_ code: CocoaError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) {
    do {
        try body()
        Issue.record("no error; expected CocoaError \(code.rawValue)", sourceLocation: sourceLocation)
    } catch let error as CocoaError {
        #expect(error.code == code, "CocoaError \(error.code.rawValue): \(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("\(error); expected CocoaError \(code.rawValue)", sourceLocation: sourceLocation)
    }
}
