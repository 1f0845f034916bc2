import DocumentApp
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PurgeKit
import PurgeTesting
import Testing

/// The guide's five samples (Sources/DocumentApp/GuideSamples.swift) run on
/// a real mount, checking what they read and do. This file, like the
/// samples', imports Foundation beside PurgeKit: what it calls directly is
/// PurgeKit's too.
extension AppOnAMount {
@Suite struct GuideSampleTests {
    @Test func theMetricsLoopSeesWhatUsageSees() async throws {
        let home = try Scratch("metrics")
        defer { home.remove() }
        let device = try SimulatedDevice(container: home.url, capacity: .mebibytes(64))
        defer { try? device.unmount() }
        try await runningApp(in: device) {
            let document = URL.documentsDirectory.appendingPathComponent("book.epub")
            try Data(repeating: 7, count: 300_000).write(to: document)
            try Data(repeating: 8, count: 120_000).write(to: URL.cachesDirectory.appendingPathComponent("cover.jpg"))
            try copyDocument(at: document, to: URL.documentsDirectory.appendingPathComponent("book copy.epub"))

            let seen = SeenMetrics<TotalFileSizeMetric, TotalFileCountMetric>()
            let loop = Task { await gatherDiskUsageMetrics(analyze: { seen.add(size: $0) }, track: { seen.add(count: $0) }) }
            defer { loop.cancel() }
            #expect(try purgefs(["metrics", "--deliver", device.mountPoint.path]) == 0)
            try await waitUntil("a delivered report") { !seen.sizes.isEmpty && !seen.counts.isEmpty }

            let whole = try device.usage(of: "")
            let caches = try device.usage(of: "Library/Caches").allocated.bytes + ((try? device.usage(of: "tmp"))?.allocated.bytes ?? 0)
            let size = try #require(seen.sizes.first), count = try #require(seen.counts.first)
            #expect(UInt64(size.binaryFileSize.converted(to: .bytes).value) == 0, "no bundle= on this mount")
            #expect(UInt64((size.binaryFileSize + size.dataFileSize).converted(to: .bytes).value) == whole.allocated.bytes)
            #expect(UInt64(size.cacheFolderSize.converted(to: .bytes).value) == caches)
            #expect(caches >= 120_000)
            #expect(UInt64(size.cloneSize.converted(to: .bytes).value) == whole.cloneSavings.bytes)
            #expect(whole.cloneSavings.bytes >= 300_000, "the copy is a clone, counted once")
            #expect(count.binaryFileCount == 0)
            #expect(count.dataFileCount == whole.files)
            #expect(count.dataFileCount == 3)
            // One report: today so far (the container has no past day).
            #expect(seen.sizes.count == 1)
        }
    }

    @Test func aDownloadMovedIntoCachesIsPurgedUnderASqueeze() async throws {
        let home = try Scratch("download")
        defer { home.remove() }
        let device = try SimulatedDevice(container: home.url, capacity: .mebibytes(64), options: ["low=8M", "high=16M"])
        defer { try? device.unmount() }
        let server = try LoopbackServer(body: Array(repeating: 42, count: 512 * 1024))
        defer { server.stop() }
        try await runningApp(in: device) {
            #expect(URL.cachesDirectory.path == device.path("Library/Caches"))
            let task = makeCacheDownloadTask(for: server.url)
            task.resume()
            var cached: URL?
            try await waitUntil("the download in Library/Caches") {
                cached = try FileManager.default.contentsOfDirectory(at: URL.cachesDirectory, includingPropertiesForKeys: nil).first
                return cached.map { (try? Data(contentsOf: $0).count) == 512 * 1024 } ?? false
            }
            let file = try #require(cached)
            #expect(purgefsAttribute("purgeable", of: file.path) == "1", "in the purgeable zone")
            try device.squeeze(available: .mebibytes(1))
            try device.waitForMonitor()
            #expect(!FileManager.default.fileExists(atPath: file.path))
            #expect(try device.purged(in: "Library/Caches").map(\.path) == ["Library/Caches/" + file.lastPathComponent])
        }
    }

    @Test func removeLocalDocumentEvictsOnlyAnUploadedDocumentAndTheFetchBringsItBack() async throws {
        let home = try Scratch("icloud"), remote = try Scratch("remote")
        defer { home.remove(); remote.remove() }
        let device = try SimulatedDevice(container: home.url, capacity: .mebibytes(64), options: ["cloud=\(remote.url.path)"])
        defer { try? device.unmount() }
        try await runningApp(in: device) {
            let report = URL.documentsDirectory.appendingPathComponent("report.pages")
            let content = Data((0..<200_000).map { UInt8($0 % 251) })
            try content.write(to: report)
            #expect(FileManager.default.isUbiquitousItem(at: report))
            try await waitUntil("the upload") {
                try report.resourceValues(forKeys: [.ubiquitousItemIsUploadedKey]).ubiquitousItemIsUploaded == true
            }

            // A document open for writing is not uploaded (the tier uploads after the close): left alone.
            let draft = URL.documentsDirectory.appendingPathComponent("draft.pages")
            FileManager.default.createFile(atPath: draft.path, contents: nil)
            let writing = try FileHandle(forWritingTo: draft)
            try writing.write(contentsOf: Data(repeating: 1, count: 50_000))
            let draftValues = try draft.resourceValues(forKeys: [.ubiquitousItemIsUploadedKey, .ubiquitousItemIsUploadingKey])
            #expect(draftValues.ubiquitousItemIsUploaded == false)
            #expect(draftValues.ubiquitousItemIsUploading == true)
            try removeLocalDocument(at: draft)
            #expect(try draft.resourceValues(forKeys: [.ubiquitousItemDownloadingStatusKey]).ubiquitousItemDownloadingStatus == .current)
            // Asked directly, the eviction of a document not uploaded yet is refused, as Foundation refuses it.
            expectCocoaError(.fileWriteUnknown) { try FileManager.default.evictUbiquitousItem(at: draft) }
            #expect(purgefsAttribute("allocated", of: draft.path) != "0")
            try writing.close()

            // A file outside the ubiquitous zones: not an iCloud item, nothing evicted, and evicting it is Foundation's error.
            let notes = URL.libraryDirectory.appendingPathComponent("notes.txt")
            try Data("notes".utf8).write(to: notes)
            #expect(try notes.resourceValues(forKeys: [.isUbiquitousItemKey]).isUbiquitousItem == false)
            #expect(try notes.resourceValues(forKeys: [.ubiquitousItemIsUploadedKey]).ubiquitousItemIsUploaded == nil)
            try removeLocalDocument(at: notes)
            expectCocoaError(.ubiquitousFileUnavailable) { try FileManager.default.evictUbiquitousItem(at: notes) }
            expectCocoaError(.fileReadNoSuchFile) {
                try URL.documentsDirectory.appendingPathComponent("missing").resourceValues(forKeys: [.ubiquitousItemIsUploadedKey])
            }

            // The uploaded one is evicted: listed with its size, its data gone.
            try removeLocalDocument(at: report)
            let evicted = try report.resourceValues(forKeys: [.ubiquitousItemDownloadingStatusKey, .ubiquitousItemIsUploadedKey, .fileSizeKey])
            #expect(evicted.ubiquitousItemDownloadingStatus == .notDownloaded)
            #expect(evicted.ubiquitousItemIsUploaded == true)
            #expect(evicted.fileSize == content.count)
            #expect(purgefsAttribute("allocated", of: report.path) == "0")

            // The guide's fetchRemoteDocument(for:) as written returns early for it: it is uploaded.
            try fetchRemoteDocument(for: report)
            #expect(try report.resourceValues(forKeys: [.ubiquitousItemDownloadingStatusKey]).ubiquitousItemDownloadingStatus == .notDownloaded)
            // Asking whether the data is here brings it back.
            try fetchRemoteDocumentIfEvicted(for: report)
            try await waitUntil("the download") {
                try report.resourceValues(forKeys: [.ubiquitousItemDownloadingStatusKey]).ubiquitousItemDownloadingStatus == .current
            }
            #expect(try report.resourceValues(forKeys: [.ubiquitousItemIsDownloadingKey]).ubiquitousItemIsDownloading == false)
            #expect(purgefsAttribute("allocated", of: report.path) != "0")
            #expect(try Data(contentsOf: report) == content)
        }
    }

    @Test func copyItemMakesACloneThatCloneSavingsCounts() async throws {
        let home = try Scratch("clone")
        defer { home.remove() }
        let device = try SimulatedDevice(container: home.url, capacity: .mebibytes(64))
        defer { try? device.unmount() }
        try await runningApp(in: device) {
            let original = URL.documentsDirectory.appendingPathComponent("movie.mov")
            let content = Data((0..<400_000).map { UInt8($0 % 199) })
            try content.write(to: original)
            let before = try device.usage(of: "")
            let copy = URL.documentsDirectory.appendingPathComponent("movie copy.mov")
            try copyDocument(at: original, to: copy)
            #expect(try Data(contentsOf: copy) == content)
            #expect(purgefsAttribute("content_id", of: copy.path) == purgefsAttribute("content_id", of: original.path))
            let after = try device.usage(of: "")
            #expect(after.cloneSavings.bytes >= UInt64(content.count))
            #expect(after.allocated == before.allocated, "the clone costs no space")
            // Foundation's errors: the destination exists; the source is missing.
            expectCocoaError(.fileWriteFileExists) { try copyDocument(at: original, to: copy) }
            expectCocoaError(.fileReadNoSuchFile) {
                try copyDocument(at: URL.documentsDirectory.appendingPathComponent("missing"), to: URL.documentsDirectory.appendingPathComponent("x"))
            }
        }
    }
    @Test func copyItemOfAFolderClonesEachFileAndCopiesTheRestAsFoundationDoes() async throws {
        let home = try Scratch("folder")
        defer { home.remove() }
        let device = try SimulatedDevice(container: home.url, capacity: .mebibytes(64))
        defer { try? device.unmount() }
        try await runningApp(in: device) {
            let album = URL.documentsDirectory.appendingPathComponent("Album")
            let nested = album.appendingPathComponent("2026/June", isDirectory: true)
            try FileManager.default.createDirectory(at: nested, withIntermediateDirectories: true)
            // Whole 4 KiB blocks: clone_savings counts what the files hold on disk.
            let files: [(String, Int, Int)] = [("cover.jpg", 36 << 12, 0o644), ("notes.txt", 5 << 12, 0o600), ("2026/June/a.heic", 74 << 12, 0o640),
                                               ("2026/June/run.sh", 2 << 12, 0o755)]
            for (index, (name, size, mode)) in files.enumerated() {
                let url = album.appendingPathComponent(name)
                try Data((0..<size).map { UInt8(($0 + index * 7) % 251) }).write(to: url)
                try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: url.path)
            }
            try FileManager.default.setAttributes([.posixPermissions: 0o750], ofItemAtPath: nested.path)
            try FileManager.default.createSymbolicLink(atPath: album.appendingPathComponent("latest").path, withDestinationPath: "2026/June/a.heic")
            try FileManager.default.createSymbolicLink(atPath: album.appendingPathComponent("gone").path, withDestinationPath: "/nowhere")
            let before = try device.usage(of: "")

            let copy = URL.documentsDirectory.appendingPathComponent("Album copy")
            try copyDocument(at: album, to: copy)

            let total = UInt64(files.map(\.1).reduce(0, +))
            let after = try device.usage(of: "")
            #expect(after.cloneSavings.bytes - before.cloneSavings.bytes == total, "every file a clone")
            #expect(after.allocated == before.allocated, "the copy costs no space")
            for (name, _, mode) in files {
                let original = album.appendingPathComponent(name), cloned = copy.appendingPathComponent(name)
                #expect(try Data(contentsOf: cloned) == Data(contentsOf: original), "\(name)")
                #expect(try permissions(cloned) == mode, "\(name)")
                #expect(purgefsAttribute("content_id", of: cloned.path) == purgefsAttribute("content_id", of: original.path))
            }
            #expect(try permissions(copy.appendingPathComponent("2026/June")) == 0o750)
            #expect(try permissions(copy) == permissions(album))
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: copy.appendingPathComponent("latest").path) == "2026/June/a.heic")
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: copy.appendingPathComponent("gone").path) == "/nowhere")
            #expect(try FileManager.default.subpathsOfDirectory(atPath: copy.path).sorted()
                    == FileManager.default.subpathsOfDirectory(atPath: album.path).sorted())

            // Foundation's errors: the destination exists (nothing copied into it); the source is missing.
            expectCocoaError(.fileWriteFileExists) { try copyDocument(at: album, to: copy) }
            #expect(try FileManager.default.contentsOfDirectory(atPath: copy.path).count == 5)
            expectCocoaError(.fileReadNoSuchFile) {
                try copyDocument(at: URL.documentsDirectory.appendingPathComponent("No Album"), to: URL.documentsDirectory.appendingPathComponent("y"))
            }
        }
    }

    /// Each call PurgeKit answers, made from this file (which imports
    /// Foundation too), gets PurgeKit's answer: what Foundation alone gives
    /// differs in each.
    @Test func withFoundationImportedTooTheCallsArePurgeKits() async throws {
        let home = try Scratch("imports")
        defer { home.remove() }
        let device = try SimulatedDevice(container: home.url, capacity: .mebibytes(64), options: ["low=4M"])
        defer { try? device.unmount() }
        try await runningApp(in: device) {
            #expect(FileManager.default.temporaryDirectory.path == device.path("tmp"))
            #expect(FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).map(\.path) == [device.path("Library/Caches")])
            #expect(URL.cachesDirectory.path == device.path("Library/Caches"))
            let support = try FileManager.default.url(for: .applicationSupportDirectory, in: .userDomainMask, appropriateFor: nil, create: true)
            #expect(support.path == device.path("Library/Application Support"), "Foundation alone: ~/.local/share")

            let original = URL.documentsDirectory.appendingPathComponent("a.bin")
            try Data(repeating: 5, count: 50 << 12).write(to: original)
            let values = try original.resourceValues(forKeys: [.isExcludedFromBackupKey, .volumeAvailableCapacityForImportantUsageKey,
                                                               .volumeTotalCapacityKey])
            #expect(values.isExcludedFromBackup == false, "Foundation alone answers nil")
            #expect(values.volumeTotalCapacity.map(UInt64.init) == (try device.space()).capacity.bytes, "Foundation alone: the host's")
            #expect(values.volumeAvailableCapacityForImportantUsage != nil)
            // A Set variable, and setResourceValues (Foundation alone drops the value on Linux).
            var index = original
            var excluded = URLResourceValues()
            excluded.isExcludedFromBackup = true
            try index.setResourceValues(excluded)
            #expect(purgefsAttribute("excluded_from_backup", of: index.path) == "1")
            let keys: Set<URLResourceKey> = [.isExcludedFromBackupKey]
            #expect(try index.resourceValues(forKeys: keys).isExcludedFromBackup == true)

            // A clone through FileManager.default, and through it passed on as a plain FileManager.
            let manager: FileManager = FileManager.default
            for (index, name) in ["b.bin", "c.bin"].enumerated() {
                let copy = URL.documentsDirectory.appendingPathComponent(name)
                if index == 0 { try FileManager.default.copyItem(at: original, to: copy) } else { try manager.copyItem(at: original, to: copy) }
                #expect(purgefsAttribute("content_id", of: copy.path) == purgefsAttribute("content_id", of: original.path), "\(name)")
            }
            #expect(try device.usage(of: "").cloneSavings.bytes == 2 * (50 << 12))
        }
    }
}
}
