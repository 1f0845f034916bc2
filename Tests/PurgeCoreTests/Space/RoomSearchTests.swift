@testable import PurgeCore
import XCTest

/// The purge → evict → ENOSPC loop in-process, with the device, the purger
/// and the evictions played by closures.
final class RoomSearchTests: XCTestCase {
    func testGrantedRoomIsReturnedWithoutPurgingOrEvicting() {
        var purged = 0, evicted = 0
        let reserved = RoomSearch.run(ask: { .granted(4096) }, purge: { _ in purged += 1; return 1 }, evict: { evicted += 1; return 1 })
        XCTAssertEqual(reserved, 4096)
        XCTAssertEqual([purged, evicted], [0, 0])
    }

    func testItPurgesWhatTheDeviceSaysThenAsksAgain() {
        var answers: [RoomAnswer] = [.purgeFirst(100), .purgeFirst(50), .granted(10)]
        var purges: [UInt64] = [], evicted = 0
        let reserved = RoomSearch.run(
            ask: { answers.removeFirst() }, purge: { purges.append($0); return $0 }, evict: { evicted += 1; return 0 })
        XCTAssertEqual(reserved, 10)
        XCTAssertEqual(purges, [100, 50])
        XCTAssertEqual(evicted, 0, "a purge that freed something needs no eviction")
    }

    func testItEvictsOnlyWhenThePurgeFreedNothingOrNothingIsPurgeable() {
        var answers: [RoomAnswer] = [.purgeFirst(100), .noSpace, .granted(7)]
        var steps: [String] = []
        let reserved = RoomSearch.run(
            ask: { answers.removeFirst() }, purge: { steps.append("purge \($0)"); return 0 },
            evict: { steps.append("evict"); return 1 })
        XCTAssertEqual(reserved, 7)
        XCTAssertEqual(steps, ["purge 100", "evict", "evict"])
    }

    func testNoSpaceWhenNeitherPurgingNorEvictingFreesAnything() {
        var steps: [String] = []
        XCTAssertNil(RoomSearch.run(ask: { .purgeFirst(5) }, purge: { _ in steps.append("purge"); return 0 }, evict: { steps.append("evict"); return 0 }))
        XCTAssertEqual(steps, ["purge", "evict"])
        XCTAssertNil(RoomSearch.run(ask: { .noSpace }, purge: { _ in XCTFail("nothing to purge"); return 0 }, evict: { 0 }))
    }

    func testTheRoundsAreBounded() {
        var asked = 0
        // A device that never grants, and purges that always free a little: no endless loop.
        XCTAssertNil(RoomSearch.run(ask: { asked += 1; return .purgeFirst(1) }, purge: { _ in 1 }, evict: { 0 }))
        XCTAssertEqual(asked, RoomSearch.rounds)
        asked = 0
        XCTAssertNil(RoomSearch.run(rounds: 3, ask: { asked += 1; return .noSpace }, purge: { _ in 0 }, evict: { 1 }))
        XCTAssertEqual(asked, 3)
    }
}
