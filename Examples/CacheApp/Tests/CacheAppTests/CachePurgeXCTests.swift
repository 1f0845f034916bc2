import CacheApp
import Foundation
import PurgeTesting
import XCTest

/// XCTest: the cache under a squeeze. The system purges the least recently
/// used downloads; the app downloads them again when it needs them.
final class CachePurgeXCTests: XCTestCase {
    func testPurgedDownloadsAreFetchedAgain() throws {
        let home = try ScratchHome()
        defer { home.remove() }
        let device = try SimulatedDevice(container: home.url, capacity: .mebibytes(64), options: ["low=4M", "high=6M"])
        defer { try? device.unmount() }  // also when an assertion below throws
        let server = FakeServer()
        let cache = try DownloadCache(container: device.mountPoint, downloader: server)

        let keys = ["a-4", "b-4", "c-4", "d-4", "e-4", "f-4"]  // 1 MiB each
        for key in keys { XCTAssertEqual(try cache.data(for: key).1, .downloadedAndStored) }
        XCTAssertEqual(try cache.data(for: "a-4").1, .hit, "a-4 is now the most recently used")
        let usage = try device.usage(of: "Library/Caches")
        XCTAssertEqual(usage.files, 6)
        XCTAssertEqual(usage.purgeable, .mebibytes(6))

        // 3 MiB available: below the low mark, so the monitor purges up to the high mark (3 MiB, three files).
        try device.squeeze(available: .mebibytes(3))
        try device.waitForMonitor()
        let purged = try device.purged(in: "Library/Caches")
        XCTAssertEqual(purged.map(\.path), ["b-4", "c-4", "d-4"].map { "Library/Caches/downloads/" + $0 })
        XCTAssertTrue(purged.allSatisfy { $0.reason == .monitor })
        XCTAssertEqual(cache.cachedKeys(), ["a-4", "e-4", "f-4"])

        let (data, outcome) = try cache.data(for: "b-4")
        XCTAssertEqual(outcome, .downloadedAndStored)
        XCTAssertEqual(data, FakeServer.content(of: "b-4"))
        XCTAssertEqual(server.downloads(of: "b-4"), 2)
        XCTAssertEqual(server.downloads(of: "a-4"), 1, "never purged: never downloaded again")
    }
}
