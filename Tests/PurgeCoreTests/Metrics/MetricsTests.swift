import PurgeCore
import XCTest

/// The metrics history's figures, folding and daily reports, on a fake clock.
final class MetricsTests: XCTestCase {
    /// 2025-06-01T00:00:00Z.
    let june1: Int64 = 1_748_736_000

    func sample(at time: Int64, from start: Int64? = nil, size: UInt64 = 100, purged: UInt64 = 0) -> MetricsSample {
        var sample = MetricsSample(start: start ?? time - 3600, time: time)
        sample.dataFileSize = size
        sample.dataFileCount = size / 10
        sample.purgedBytes = purged
        sample.purgedFiles = purged > 0 ? 1 : 0
        return sample
    }

    // MARK: Calendar

    func testUTCCalendar() {
        XCTAssertEqual(UTCCalendar.iso8601(0), "1970-01-01T00:00:00Z")
        XCTAssertEqual(UTCCalendar.iso8601(june1), "2025-06-01T00:00:00Z")
        XCTAssertEqual(UTCCalendar.iso8601(june1 - 1), "2025-05-31T23:59:59Z")
        XCTAssertEqual(UTCCalendar.iso8601(951_782_400), "2000-02-29T00:00:00Z")
        XCTAssertEqual(UTCCalendar.iso8601(-1), "1969-12-31T23:59:59Z")
        XCTAssertEqual(UTCCalendar.day(of: june1 + 86399), june1)
        XCTAssertEqual(UTCCalendar.day(of: -1), -86400)
        XCTAssertEqual(UTCCalendar.timeText(june1 + 3723), "01:02:03")
    }

    // MARK: Figures

    func testPartsDoNotOverlap() {
        let root = Totals(size: 1000, files: 10, allocated: 1200, purgeable: 300, cloneSavings: 50)
        let scope = MetricsScope(bundle: "App.app", zones: ["Library/Caches", "caches", "tmp"])
        let parts = scope.parts(
            root: root, bundle: Totals(size: 200, files: 2, allocated: 240),
            zones: ["Library/Caches": Totals(size: 100, files: 1, allocated: 120), "tmp": Totals(size: 50, files: 3, allocated: 60)])
        var sample = MetricsSample(start: 0, time: 0)
        sample.setFigures(parts)
        XCTAssertEqual(sample.binaryFileSize, 240)
        XCTAssertEqual(sample.cacheFolderSize, 180)
        XCTAssertEqual(sample.dataFileSize, 1200 - 240 - 180)
        XCTAssertEqual(sample.binaryFileCount, 2)
        XCTAssertEqual(sample.cacheFileCount, 4)
        XCTAssertEqual(sample.dataFileCount, 4)
        XCTAssertEqual(sample.totalFileSize, root.allocated, "the parts add up to the container")
        XCTAssertEqual(sample.totalFileCount, root.files)
        XCTAssertEqual(sample.cloneSize, 50)
        XCTAssertEqual(sample.logicalSize, 1000)
        XCTAssertEqual(sample.purgeable, 300)
    }

    /// Clone-shared data is counted once: the sizes are allocated bytes, in
    /// which a clone is charged only what it does not share; the shared
    /// bytes are the clone size, not added to any part.
    func testCloneSharedDataCountedOnce() {
        // A 1000-byte file and its clone sharing 800 bytes of it.
        let root = Totals(size: 2000, files: 2, allocated: 1200, cloneSavings: 800)
        var sample = MetricsSample(start: 0, time: 0)
        sample.setFigures(MetricsScope(bundle: nil, zones: []).parts(root: root, bundle: nil, zones: [:]))
        XCTAssertEqual(sample.totalFileSize, 1200)
        XCTAssertEqual(sample.dataFileSize, 1200)
        XCTAssertEqual(sample.cloneSize, 800)
        XCTAssertEqual(sample.logicalSize, 2000)
    }

    func testNestedZonesAndBundleCountOnce() {
        let scope = MetricsScope(bundle: "App", zones: ["Library", "Library/Caches", "App/tmp", "Library"])
        XCTAssertEqual(scope.countedZones, ["Library"])
        let inZone = MetricsScope(bundle: "caches/App", zones: ["caches"])
        let parts = inZone.parts(root: Totals(files: 10, allocated: 1000), bundle: Totals(files: 2, allocated: 100),
                                 zones: ["caches": Totals(files: 5, allocated: 500)])
        XCTAssertEqual(parts.caches.allocated, 400, "the bundle is taken out of the zone holding it")
        XCTAssertEqual(parts.caches.files, 3)
        var sample = MetricsSample(start: 0, time: 0)
        sample.setFigures(parts)
        XCTAssertEqual(sample.totalFileSize, 1000)
    }

    func testPurgedSinceThePreviousSample() {
        var previous = MetricsSample(start: 0, time: 10)
        previous.setPurged(bytesTotal: 500, filesTotal: 5, previous: nil)
        XCTAssertEqual(previous.purgedBytes, 0, "the first sample has nothing to compare with")
        var next = MetricsSample(start: 10, time: 20)
        next.setPurged(bytesTotal: 800, filesTotal: 7, previous: previous)
        XCTAssertEqual(next.purgedBytes, 300)
        XCTAssertEqual(next.purgedFiles, 2)
        var reset = MetricsSample(start: 20, time: 30)
        reset.setPurged(bytesTotal: 100, filesTotal: 1, previous: next)
        XCTAssertEqual(reset.purgedBytes, 0, "counters that went back count as nothing purged")
    }

    // MARK: Folding

    func testFoldedKeepsTheLastFiguresAndSumsPurges() {
        let rows = [sample(at: june1 + 10, from: june1, size: 1, purged: 5),
                    sample(at: june1 + 30, from: june1 + 20, size: 3, purged: 7),
                    sample(at: june1 + 20, from: june1 + 10, size: 2, purged: 0)]
        let folded = MetricsSample.folded(rows, into: .hour)
        XCTAssertEqual(folded.dataFileSize, 3)
        XCTAssertEqual(folded.time, june1 + 30)
        XCTAssertEqual(folded.start, june1)
        XCTAssertEqual(folded.purgedBytes, 12)
        XCTAssertEqual(folded.purgedFiles, 2)
        XCTAssertEqual(folded.sampleCount, 3)
        XCTAssertEqual(folded.resolution, .hour)
    }

    /// The mount's sample and one `purgefs metrics --deliver` asked for can
    /// fall in one second: the later one, last in the store's order, holds
    /// the figures (it was taking the first's, an empty container's).
    func testFoldedRowsOfOneSecondKeepTheLaterOnesFigures() {
        let rows = [sample(at: june1 + 10, from: june1 + 10, size: 0, purged: 0),
                    sample(at: june1 + 10, from: june1 + 10, size: 9, purged: 0)]
        XCTAssertEqual(MetricsSample.folded(rows, into: .hour).dataFileSize, 9)
        let day = try! XCTUnwrap(MetricsDay.days(of: rows, last: 1, now: june1 + 20).first)
        XCTAssertEqual(day.fullDay.dataFileSize, 9)
    }

    /// Applies compactions to an in-memory history, as the store does.
    struct History {
        var rows: [Int: MetricsSample] = [:]
        var next = 0
        mutating func add(_ row: MetricsSample) { rows[next] = row; next += 1 }
        mutating func compact(_ retention: MetricsRetention, now: Int64) {
            let cutoff = retention.oldestUntouched(now: now)
            let old = rows.filter { $0.value.time < cutoff }.map { (key: $0.key, row: $0.value) }
            let plan = retention.compaction(of: old, now: now)
            for key in plan.removals { rows[key] = nil }
            for row in plan.insertions { add(row) }
        }
        var sorted: [MetricsSample] { rows.values.sorted { $0.time < $1.time } }
    }

    func testRetentionFoldsIntoHoursThenDaysThenDrops() {
        let retention = MetricsRetention(samplesFor: 2 * 86400, hoursFor: 10 * 86400, daysFor: 30 * 86400)
        var history = History()
        // Forty days of a sample every 15 minutes, compacted every six hours as the clock moves on.
        var now = june1
        var purgedTotal: UInt64 = 0
        var byHour: [Int64: UInt64] = [:]
        for step in 0..<(40 * 96) {
            now = june1 + Int64(step) * 900 + 450
            var row = sample(at: now, from: now - 900, size: UInt64(step), purged: 1)
            row.purgedBytesTotal = purgedTotal
            purgedTotal += 1
            history.add(row)
            byHour[UTCCalendar.floor(now, to: 3600), default: 0] += 1
            if step % 24 == 23 { history.compact(retention, now: now) }
        }
        history.compact(retention, now: now)
        let rows = history.sorted
        let recentSamples = rows.filter { $0.resolution == .sample }
        let hours = rows.filter { $0.resolution == .hour }
        let days = rows.filter { $0.resolution == .day }
        XCTAssertTrue(recentSamples.allSatisfy { $0.time >= now - 2 * 86400 - 3600 }, "samples older than two days are folded")
        XCTAssertGreaterThanOrEqual(recentSamples.count, 2 * 96 - 4)
        XCTAssertLessThanOrEqual(recentSamples.count, 2 * 96 + 4)
        XCTAssertTrue(hours.allSatisfy { $0.sampleCount == 4 }, "an hour holds its four samples")
        XCTAssertTrue(hours.allSatisfy { $0.time >= now - 10 * 86400 - 86400 }, "hours older than ten days are folded")
        XCTAssertTrue(days.allSatisfy { $0.sampleCount == 96 }, "a day holds its 96 samples")
        XCTAssertTrue(days.allSatisfy { $0.time >= now - 30 * 86400 }, "days older than thirty are dropped")
        XCTAssertFalse(days.isEmpty)
        XCTAssertEqual(Set(days.map { UTCCalendar.day(of: $0.time) }).count, days.count, "one row a day")
        XCTAssertEqual(Set(hours.map { UTCCalendar.floor($0.time, to: 3600) }).count, hours.count, "one row an hour")
        // Nothing purged is lost by folding, only by dropping whole days.
        let kept = rows.reduce(0) { $0 + $1.purgedBytes }
        XCTAssertEqual(kept, UInt64(rows.reduce(0) { $0 + $1.sampleCount }))
        // Rows stay in time order without overlapping.
        for (a, b) in zip(rows, rows.dropFirst()) { XCTAssertLessThanOrEqual(a.time, b.start, "\(a) then \(b)") }
        // Bounded: compacting again changes nothing.
        let before = history.rows.count
        history.compact(retention, now: now)
        XCTAssertEqual(history.rows.count, before)
        XCTAssertLessThanOrEqual(before, 2 * 96 + 4 + 11 * 24 + 31)
    }

    func testCompactionLeavesRecentRowsAndFoldedRowsAlone() {
        let retention = MetricsRetention()
        let now = june1 + 30 * 86400
        let rows: [(key: Int, row: MetricsSample)] = [
            (1, sample(at: now - 60)),
            (2, { var r = sample(at: june1 + 3600 * 5 + 10); r.resolution = .hour; return r }()),
        ]
        XCTAssertTrue(retention.compaction(of: rows, now: now).isEmpty)
        let stale = retention.compaction(of: [(3, sample(at: now - 3661 * 86400))], now: now)
        XCTAssertEqual(stale.removals, [3])
        XCTAssertTrue(stale.insertions.isEmpty)
    }

    // MARK: Days

    func testDaysGroupByUTCDayWithAFullDayEntry() {
        let rows = [
            sample(at: june1 - 10, size: 50, purged: 1),                // May 31
            sample(at: june1 + 3600, from: june1 - 10, size: 60, purged: 2),
            sample(at: june1 + 7200, size: 70, purged: 3),
            sample(at: june1 + 86400 + 5, size: 80),                    // June 2
        ]
        let now = june1 + 86400 + 100
        let days = MetricsDay.days(of: rows.reversed(), last: 7, now: now)
        XCTAssertEqual(days.map(\.start), [june1 - 86400, june1, june1 + 86400])
        let june = days[1]
        XCTAssertEqual(june.entries.map(\.dataFileSize), [60, 70])
        let full = june.fullDay
        XCTAssertEqual(full.start, june1)
        XCTAssertEqual(full.duration, 86400)
        XCTAssertEqual(full.dataFileSize, 70, "a snapshot: the day's last figures")
        XCTAssertEqual(full.purgedBytes, 5, "purges add up")
        XCTAssertEqual(full.sampleCount, 2)
        XCTAssertTrue(june.isComplete(now: now))
        XCTAssertFalse(days[2].isComplete(now: now))
        XCTAssertEqual(MetricsDay.days(of: rows, last: 1, now: now).map(\.start), [june1 + 86400], "--days 1 is today")
        XCTAssertEqual(MetricsDay.days(of: rows, last: 2, now: now).count, 2)
    }

    func testHourlyRowsOfADay() {
        let rows = (0..<10).map { sample(at: june1 + Int64($0) * 1200 + 1, from: june1 + Int64($0) * 1200, size: UInt64($0), purged: 1) }
        let day = MetricsDay.days(of: rows, last: 1, now: june1 + 50000)[0]
        XCTAssertEqual(day.entries.count, 10)
        let hours = day.hourly
        XCTAssertEqual(hours.map(\.dataFileSize), [2, 5, 8, 9])
        XCTAssertEqual(hours.map(\.purgedBytes), [3, 3, 3, 1])
    }
}
