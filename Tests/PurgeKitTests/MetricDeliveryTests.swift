import Glibc
@testable import PurgeKit
import PurgeCore
import PurgeStore
import PurgeTesting
import Testing

/// `MetricManager` on a real mount whose history holds two past days: it
/// delivers them oldest first, once per app; another app gets them too.
@Suite(.serialized) struct MetricDeliveryTests {
    @Test func pastDaysComeOldestFirstAndOncePerApp() async throws {
        let home = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("purgekit-days-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home.appendingPathComponent(".purgefs"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: home) }
        let today = UTCCalendar.day(of: Int64(Date().timeIntervalSince1970))
        let days = [today - 2 * 86400, today - 86400]
        do {
            let store = try MetricsStore(path: home.path + "/.purgefs/" + MetricsStore.fileName, mode: .readWrite)
            for (index, day) in days.enumerated() {
                var sample = MetricsSample(start: day + 3600, time: day + 7200)
                sample.dataFileSize = UInt64(1000 * (index + 1))
                sample.dataFileCount = UInt64(index + 1)
                sample.capacity = 1 << 26
                try store.insert(sample)
            }
        }
        let device = try SimulatedDevice(container: home, capacity: .mebibytes(64))
        defer { try? device.unmount() }
        setenv("PURGEFS_CONTAINER", device.mountPoint.path, 1)
        defer { unsetenv("PURGEFS_CONTAINER"); unsetenv("PURGEFS_APP") }

        /// The first `count` reports of a new manager's iteration, or what came within 20 s.
        func firstReports(_ count: Int, app: String) async -> [MetricReport] {
            setenv("PURGEFS_APP", app, 1)
            let collecting = Task {
                var reports: [MetricReport] = []
                for await report in MetricManager().metricReports {
                    reports.append(report)
                    if reports.count == count { break }
                }
                return reports
            }
            let deadline = Task {
                try? await Task.sleep(for: .seconds(20))
                collecting.cancel()
            }
            defer { deadline.cancel() }
            return await collecting.value
        }
        let delivered = await firstReports(2, app: "Notes")
        #expect(delivered.map { Int64($0.timeRange.start.timeIntervalSince1970) } == days)
        #expect(delivered.allSatisfy { $0.timeRange.duration == 86400 })
        let sizes = delivered.compactMap { report -> Double? in
            guard case .totalFileSize(let size) = report.intervalEntries.fullDayEntry.values.first else { return nil }
            return size.dataFileSize.converted(to: .bytes).value
        }
        #expect(sizes == [1000, 2000])

        // Photos gets both too; Notes, which has had them, next gets today's on request.
        #expect(await firstReports(2, app: "Photos").count == 2)
        // Maps stops after one: the other is still its own to have, in the next iteration.
        let one = await firstReports(1, app: "Maps"), other = await firstReports(1, app: "Maps")
        #expect((one + other).map { Int64($0.timeRange.start.timeIntervalSince1970) } == days,
                "a report is delivered when it is handed over, not when the day is found")
        let deliver = Process()
        deliver.executableURL = URL(fileURLWithPath: device.binary.path)
        deliver.arguments = ["metrics", "--deliver", device.mountPoint.path]
        deliver.standardOutput = FileHandle.nullDevice
        try deliver.run()
        deliver.waitUntilExit()
        #expect(deliver.terminationStatus == 0)
        let next = await firstReports(1, app: "Notes")
        #expect(next.map { Int64($0.timeRange.start.timeIntervalSince1970) } == [today], "today so far, not a past day again")
        #expect(next.first.map { $0.timeRange.duration < 86400 } == true)
    }
}
