import DocumentApp
import PurgeKit
import PurgeTesting
import Testing

/// The example app on a simulated device: the way an iOS app's storage
/// layer is tested, on Linux.
extension AppOnAMount {
@Suite struct DocumentLibraryTests {
    @Test func underPressureThumbnailsGoAndEvictedDocumentsComeBack() async throws {
        let home = try Scratch("library"), remote = try Scratch("library-remote")
        defer { home.remove(); remote.remove() }
        let device = try SimulatedDevice(container: home.url, capacity: .mebibytes(64),
                                         options: ["cloud=\(remote.url.path)", "low=8M", "high=16M"])
        defer { try? device.unmount() }
        try await runningApp(in: device) {
            let library = DocumentLibrary()
            let names = ["a.pages", "b.pages", "c.pages"]
            for (index, name) in names.enumerated() {
                try library.save(Data(repeating: UInt8(index + 1), count: 1 << 20), as: name, thumbnail: Data(repeating: 9, count: 256 << 10))
            }
            try await waitUntil("the uploads") {
                try names.allSatisfy {
                    try library.documents.appendingPathComponent($0).resourceValues(forKeys: [.ubiquitousItemIsUploadedKey]).ubiquitousItemIsUploaded == true
                }
            }
            #expect(try library.freeUpSpace(keeping: ["a.pages"]) == ["b.pages", "c.pages"])
            #expect(try device.usage(of: "Documents").allocated.bytes < 2 << 20, "two evicted documents hold no data")

            // The system purges the thumbnails, never the documents (the purge log also lists the
            // app's two evictions, as manual).
            try device.squeeze(available: .mebibytes(2))
            try device.waitForMonitor()
            #expect(library.thumbnail(of: "a.pages") == nil)
            let purged = try device.purged()
            #expect(purged.filter { $0.reason == .monitor }.map(\.path).sorted()
                    == names.map { "Library/Caches/Thumbnails/\($0).thumb" }, "\(purged)")

            // Opening an evicted document brings it back.
            #expect(try library.open("b.pages") == Data(repeating: 2, count: 1 << 20))
        }
    }

    @Test func theIndexIsExcludedFromBackupAcrossARemountAndTheCapacitiesAreTheDevices() async throws {
        let home = try Scratch("index")
        defer { home.remove() }
        var device: SimulatedDevice? = try SimulatedDevice(container: home.url, capacity: .mebibytes(64), options: ["low=4M"])
        let index = try await runningApp(in: device!) {
            let library = DocumentLibrary()
            let index = try library.writeIndex(Data("index".utf8))
            #expect(index.path == device!.path("Library/Application Support/index.db"))
            #expect(try index.resourceValues(forKeys: [.isExcludedFromBackupKey]).isExcludedFromBackup == true)
            #expect(try library.documents.resourceValues(forKeys: [.isExcludedFromBackupKey]).isExcludedFromBackup == false)

            let space = try device!.space()
            let values = try library.documents.resourceValues(forKeys: [
                .volumeTotalCapacityKey, .volumeAvailableCapacityKey,
                .volumeAvailableCapacityForImportantUsageKey, .volumeAvailableCapacityForOpportunisticUsageKey])
            #expect(values.volumeTotalCapacity.map(UInt64.init) == space.capacity.bytes)
            #expect(values.volumeAvailableCapacity.map(UInt64.init) == space.available.bytes)
            #expect(values.volumeAvailableCapacityForImportantUsage.map(UInt64.init) == space.availableForImportantUsage.bytes)
            #expect(values.volumeAvailableCapacityForOpportunisticUsage.map(UInt64.init) == space.availableForOpportunisticUsage.bytes)
            return index
        }
        try device!.unmount()
        device = try SimulatedDevice(container: home.url, capacity: .mebibytes(64))
        defer { try? device?.unmount() }
        try await runningApp(in: device!) {
            #expect(try index.resourceValues(forKeys: [.isExcludedFromBackupKey]).isExcludedFromBackup == true, "kept like pinned")
            var url = index
            var values = URLResourceValues()
            values.isExcludedFromBackup = false
            try url.setResourceValues(values)
            #expect(try device!.attribute("excluded_from_backup", of: "Library/Application Support/index.db") == "0")
        }
    }
}
}
