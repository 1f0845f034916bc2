@testable import PurgeCore
import TestSupport
import XCTest

final class RecencyIndexTests: XCTestCase {
    typealias Item = RecencyIndex.Item

    func testItemsKeepTheirKind() {
        XCTAssertFalse(Item.file(5).isGroup)
        XCTAssertTrue(Item.group(5).isGroup)
        XCTAssertEqual(Item.group(5).slot, 5)
        XCTAssertNotEqual(Item.file(5), Item.group(5))
    }

    func testPopsInStampOrderWithTiesBrokenByItem() {
        var index = RecencyIndex()
        index.insert(.file(1), stamp: 30)
        index.insert(.group(1), stamp: 10)
        index.insert(.file(2), stamp: 10)
        index.insert(.file(3), stamp: 20)
        var order: [Item] = []
        while let (item, _) = index.popOldest() { order.append(item) }
        XCTAssertEqual(order, [.file(2), .group(1), .file(3), .file(1)])
    }

    func testRandomOperationsMatchASortedModel() {
        var random = SeededGenerator(seed: 42)
        var index = RecencyIndex()
        var model: [Item: UInt64] = [:]
        for step in 0..<5_000 {
            let item = Bool.random(using: &random) ? Item.file(UInt32.random(in: 0..<300, using: &random))
                                                   : Item.group(UInt32.random(in: 0..<50, using: &random))
            let stamp = UInt64.random(in: 0..<1_000, using: &random)
            switch Int.random(in: 0..<4, using: &random) {
            case 0, 1:
                if model[item] == nil { index.insert(item, stamp: stamp) } else { index.touch(item, stamp: stamp) }
                model[item] = stamp
            case 2:
                if model[item] != nil { index.remove(item); model[item] = nil }
            default:
                let expected = model.min { ($0.value, $0.key) < ($1.value, $1.key) }
                let popped = index.popOldest()
                XCTAssertEqual(popped?.item, expected?.key, "step \(step)")
                if let key = expected?.key { model[key] = nil }
            }
            XCTAssertEqual(index.count, model.count)
            if step % 100 == 0 {
                XCTAssertTrue(index.isConsistent())
                let walked = index.ordered().map(\.item)
                XCTAssertEqual(walked, model.sorted { ($0.value, $0.key) < ($1.value, $1.key) }.map(\.key))
            }
        }
    }

    func testOrderedWalkDoesNotChangeTheIndexAndPaysOnlyForWhatItTakes() {
        var index = RecencyIndex()
        for slot in 0..<10_000 { index.insert(.file(UInt32(slot)), stamp: UInt64((slot * 7919) % 10_000)) }
        var walk = index.ordered().makeIterator()
        var stamps: [UInt64] = []
        for _ in 0..<10 { stamps.append(walk.next()!.stamp) }
        XCTAssertEqual(stamps, Array(0..<10))
        XCTAssertEqual(walk.examined, 10)
        XCTAssertEqual(index.count, 10_000)
        XCTAssertEqual(index.oldest?.stamp, 0)
    }

    func testRestampingMovesBothWays() {
        var index = RecencyIndex()
        for slot in 0..<100 { index.insert(.file(UInt32(slot)), stamp: UInt64(slot)) }
        index.touch(.file(0), stamp: 1_000)
        XCTAssertEqual(index.oldest?.item, .file(1))
        index.touch(.file(99), stamp: 0)
        XCTAssertEqual(index.oldest?.item, .file(99))
        XCTAssertEqual(index.stamp(of: .file(0)), 1_000)
        XCTAssertTrue(index.isConsistent())
    }
}
