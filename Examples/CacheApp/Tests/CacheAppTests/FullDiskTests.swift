import CacheApp
import Foundation
import PurgeTesting
import Testing

/// Swift Testing: a disk too full to cache on. The app still gets its data,
/// stores nothing half-written, and the mount saw the ENOSPC the app handled.
@Suite(.serialized) struct FullDiskTests {
    @Test func aFullDiskStillServesDownloadsUncached() throws {
        let home = try ScratchHome()
        defer { home.remove() }
        let device = try SimulatedDevice(container: home.url, capacity: .mebibytes(16), options: ["low=0", "high=0"])
        defer { try? device.unmount() }
        let cache = try DownloadCache(container: device.mountPoint, downloader: FakeServer())
        try device.squeeze(available: .kibibytes(512))

        let (data, outcome) = try cache.data(for: "poster-8")  // 2 MiB
        #expect(outcome == .downloadedNotStored)
        #expect(data == FakeServer.content(of: "poster-8"))
        #expect(cache.cachedKeys().isEmpty, "nothing half-written left in the cache")
        #expect(try device.usage(of: "Library/Caches").size == 0)
        #expect(try device.space().noSpaceReplies >= 1)
        #expect(try device.purged().isEmpty, "nothing was purgeable")

        // Once there is room again, the same call caches.
        try device.squeeze(available: .mebibytes(8))
        #expect(try cache.data(for: "poster-8").1 == .downloadedAndStored)
        #expect(try cache.data(for: "poster-8").1 == .hit)
    }

    @Test func aPinnedDownloadSurvivesAManualPurge() throws {
        let home = try ScratchHome()
        defer { home.remove() }
        let device = try SimulatedDevice(container: home.url, capacity: .mebibytes(32))
        defer { try? device.unmount() }
        let cache = try DownloadCache(container: device.mountPoint, downloader: FakeServer())
        _ = try cache.data(for: "offline-map-4")
        _ = try cache.data(for: "thumbnail-1")
        try device.pin("Library/Caches/downloads/offline-map-4")
        try device.purgeAll()
        #expect(try device.purged().map(\.path) == ["Library/Caches/downloads/thumbnail-1"])
        #expect(cache.cachedKeys() == ["offline-map-4"])
    }
}
