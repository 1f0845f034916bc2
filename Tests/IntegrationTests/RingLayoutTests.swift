internal import CLinux
import XCTest

/// The ring's layout (`clinux_fuse_ring_layout`), for machines this one is
/// not: 64 threads in all whatever the CPUs, counting online CPUs, and an
/// entry for every queue the kernel makes (it holds every request until
/// each queue has one).
final class RingLayoutTests: XCTestCase {
    struct Layout {
        var perQueue: Int, threads: Int, served: Int
        var entries: [(owner: Int, queue: Int)]
    }

    func layout(queues: Int, online: Set<Int>, perQueue: Int = 8) -> Layout {
        var wanted = Int32(perQueue), threads: Int32 = 0, served: Int32 = 0
        let flags = (0..<queues).map { online.contains($0) ? UInt8(1) : 0 }
        var owners = [Int32](repeating: -1, count: 2 * queues + 64), qids = owners
        let total = clinux_fuse_ring_layout(Int32(queues), flags, &wanted, &threads, &served, &owners, &qids)
        XCTAssertGreaterThan(total, 0)
        return Layout(perQueue: Int(wanted), threads: Int(threads), served: Int(served),
                      entries: (0..<Int(max(total, 0))).map { (Int(owners[$0]), Int(qids[$0])) })
    }

    /// Every queue has an entry, every thread owns one at least, none is beyond the threads.
    func assertWhole(_ l: Layout, queues: Int, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(Set(l.entries.map(\.queue)), Set(0..<queues), "an entry for every queue", file: file, line: line)
        XCTAssertEqual(Set(l.entries.map(\.owner)), Set(0..<l.threads), "every thread has an entry", file: file, line: line)
        XCTAssertLessThanOrEqual(l.threads, 64, file: file, line: line)
    }

    func testThisMachinesShapeIsEightThreadsAQueue() {
        let l = layout(queues: 2, online: [0, 1])
        XCTAssertEqual([l.perQueue, l.threads, l.served, l.entries.count], [8, 16, 2, 16])
        assertWhole(l, queues: 2)
    }

    /// A VM with 240 possible CPUs, 2 online: 16 threads (it started 240 or more).
    func testOfflineCPUsQueuesRideOnTheOnlineThreads() {
        let l = layout(queues: 240, online: [0, 1])
        XCTAssertEqual([l.perQueue, l.threads, l.served], [8, 16, 2])
        XCTAssertEqual(l.entries.count, 16 + 238)
        assertWhole(l, queues: 240)
        // The served queues' own entries come first, eight threads each.
        XCTAssertEqual(l.entries.prefix(16).filter { $0.queue == 0 }.count, 8)
    }

    func testFewerThreadsAQueueWhereCPUsAreMany() {
        let sixteen = layout(queues: 16, online: Set(0..<16))
        XCTAssertEqual([sixteen.perQueue, sixteen.threads], [4, 64])
        assertWhole(sixteen, queues: 16)
        let fifty = layout(queues: 50, online: Set(0..<50))
        XCTAssertEqual([fifty.perQueue, fifty.threads], [1, 50])
        assertWhole(fifty, queues: 50)
    }

    /// Past 64 online CPUs one thread serves several queues: still 64 in all.
    func testPastSixtyFourOnlineCPUsAThreadServesSeveralQueues() {
        let l = layout(queues: 200, online: Set(0..<128))
        XCTAssertEqual([l.perQueue, l.threads, l.served], [1, 64, 128])
        XCTAssertEqual(l.entries.count, 200)
        assertWhole(l, queues: 200)
    }

    func testNoCPUReadAsOnlineServesQueueZero() {
        let l = layout(queues: 4, online: [])
        XCTAssertEqual([l.perQueue, l.threads, l.served], [8, 8, 1])
        assertWhole(l, queues: 4)
    }
}
