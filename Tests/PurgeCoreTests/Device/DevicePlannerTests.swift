import PurgeCore
import TestSupport
import XCTest

/// The shared device's choice of victims against a model written the slow,
/// obvious way: ratios as fractions recomputed from scratch for every pick,
/// every remaining item sorted for every pick.
final class DevicePlannerTests: XCTestCase {
    typealias Member = DevicePlanner.Member
    typealias Item = DeviceMember.Item

    func testQuotaTakesTheFurthestOverFirstAndReRanks() {
        // a: 6 MiB cached over a 1 MiB quota (ratio 6); b: 4 over 2 (ratio 2); c under its quota.
        let mib: UInt64 = 1 << 20
        let a = Member(name: "a", cached: 6 * mib, quota: mib, lastUse: 0,
                       items: (0..<6).map { Item(stamp: 100 + $0, bytes: mib) })
        let b = Member(name: "b", cached: 4 * mib, quota: 2 * mib, lastUse: 0,
                       items: (0..<4).map { Item(stamp: 10 + $0, bytes: mib) })
        let c = Member(name: "c", cached: 2 * mib, quota: 8 * mib, lastUse: 0,
                       items: (0..<2).map { Item(stamp: 1 + $0, bytes: mib) })
        let victims = DevicePlanner.victims(for: 9 * mib, members: [a, b, c], policy: .quota)
        XCTAssertEqual(victims.map(\.member), Model.quota(9 * mib, [a, b, c]).map(\.member))
        // Over quota first: a's four oldest (down to ratio 2, tied with b, which has more cached: b's oldest),
        // then a and b down to their quotas; then everyone by stamp: c's two, the oldest.
        XCTAssertEqual(victims.map(\.member), ["a", "a", "a", "a", "b", "a", "b", "c", "c"])
        XCTAssertEqual(DevicePlanner.plan(9 * mib, members: [a, b, c], policy: .quota),
                       [.init(member: "a", bytes: 5 * mib, items: 5), .init(member: "b", bytes: 2 * mib, items: 2),
                        .init(member: "c", bytes: 2 * mib, items: 2)])
    }

    func testLRUWeighsTheContainersLastUse() {
        // b's files are older than a's, but a has not been used since; b was used just now.
        let a = Member(name: "a", cached: 2, quota: 0, lastUse: 1_000, items: [Item(stamp: 900, bytes: 1), Item(stamp: 950, bytes: 1)])
        let b = Member(name: "b", cached: 2, quota: 0, lastUse: 10_000, items: [Item(stamp: 100, bytes: 1), Item(stamp: 200, bytes: 1)])
        XCTAssertEqual(DevicePlanner.victims(for: 4, members: [a, b], policy: .lru).map(\.member), ["a", "a", "b", "b"])
        // Plain stamps (what quota falls back to once nobody is over): b's first.
        let under = [Member(name: "a", cached: 2, quota: 10, lastUse: 1_000, items: a.items),
                     Member(name: "b", cached: 2, quota: 10, lastUse: 10_000, items: b.items)]
        XCTAssertEqual(DevicePlanner.victims(for: 4, members: under, policy: .quota).map(\.member), ["b", "b", "a", "a"])
    }

    func testStopsOnceEnoughIsPlannedAndWhenNothingIsLeft() {
        let a = Member(name: "a", cached: 30, quota: 0, lastUse: 0, items: [Item(stamp: 1, bytes: 10), Item(stamp: 2, bytes: 20)])
        XCTAssertEqual(DevicePlanner.victims(for: 5, members: [a], policy: .quota).count, 1)
        XCTAssertEqual(DevicePlanner.victims(for: 1000, members: [a], policy: .lru).count, 2)
        XCTAssertEqual(DevicePlanner.victims(for: 0, members: [a], policy: .lru).count, 0)
    }

    func testRandomDevicesAgainstTheModel() {
        var random = SeededGenerator(seed: 17)
        for _ in 0..<400 {
            let count = Int.random(in: 1...4, using: &random)
            var members: [Member] = []
            for m in 0..<count {
                var stamp = UInt64.random(in: 0...1_000, using: &random)
                let items: [Item] = (0..<Int.random(in: 0...6, using: &random)).map { _ in
                    stamp += UInt64.random(in: 1...300, using: &random)
                    return Item(stamp: stamp, bytes: UInt64.random(in: 0...50, using: &random))
                }
                let cached = items.reduce(0) { $0 + $1.bytes }
                members.append(Member(name: "m\(m)", cached: cached, quota: UInt64.random(in: 0...80, using: &random),
                                      lastUse: stamp + UInt64.random(in: 0...5_000, using: &random), items: items))
            }
            let need = UInt64.random(in: 0...200, using: &random)
            for policy in DevicePolicy.allCases {
                let planned = DevicePlanner.victims(for: need, members: members, policy: policy)
                let expected = policy == .quota ? Model.quota(need, members) : Model.lru(need, members)
                XCTAssertEqual(planned.map { "\($0.member)#\($0.item)" }, expected.map { "\($0.member)#\($0.item)" },
                               "\(policy) need \(need) members \(members)")
            }
        }
    }

    func testQuotasShareTheReserveByUse() {
        let quotas = DevicePlanner.quotas(of: [
            .init(name: "a", cacheQuota: nil, activeSeconds: 30),
            .init(name: "b", cacheQuota: nil, activeSeconds: 10),
            .init(name: "c", cacheQuota: 5, activeSeconds: 1_000),
        ], cacheSpace: 1_000)
        // R = 15% of 1000 = 150, shared 3:1 by use between a and b; c keeps its own.
        XCTAssertEqual(quotas, ["a": 112, "b": 37, "c": 5])
        XCTAssertEqual(DevicePlanner.quotas(of: [.init(name: "a", cacheQuota: nil, activeSeconds: 0),
                                                 .init(name: "b", cacheQuota: nil, activeSeconds: 0)], cacheSpace: 1_000),
                       ["a": 75, "b": 75])
    }

    /// The slow, obvious version.
    enum Model {
        struct Pick { var member: String; var item: Int }

        static func quota(_ need: UInt64, _ members: [Member]) -> [Pick] {
            var cached = members.map(\.cached)
            var next = members.map { _ in 0 }
            var planned: UInt64 = 0
            var picks: [Pick] = []
            guard need > 0 else { return [] }
            while planned < need {
                // Ratios as exact fractions; a quota of 0 is infinitely over.
                let over = members.indices.filter { next[$0] < members[$0].items.count && cached[$0] > members[$0].quota }
                guard let m = over.max(by: { x, y in
                    let rx = ratio(cached[x], members[x].quota), ry = ratio(cached[y], members[y].quota)
                    if rx != ry { return rx < ry }
                    if cached[x] != cached[y] { return cached[x] < cached[y] }
                    return members[x].name > members[y].name
                }) else { break }
                let item = members[m].items[next[m]]
                picks.append(Pick(member: members[m].name, item: next[m]))
                planned += item.bytes
                cached[m] -= min(cached[m], item.bytes)
                next[m] += 1
            }
            let rest = members.indices.flatMap { m in (next[m]..<members[m].items.count).map { (m, $0) } }
                .sorted { (members[$0.0].items[$0.1].stamp, members[$0.0].name) < (members[$1.0].items[$1.1].stamp, members[$1.0].name) }
            for (m, i) in rest where planned < need {
                picks.append(Pick(member: members[m].name, item: i))
                planned += members[m].items[i].bytes
            }
            return picks
        }

        static func lru(_ need: UInt64, _ members: [Member]) -> [Pick] {
            guard need > 0 else { return [] }
            let all = members.indices.flatMap { m in members[m].items.indices.map { (m, $0) } }
                .sorted { a, b in
                    let ka = members[a.0].items[a.1].stamp / 2 + members[a.0].lastUse / 2
                    let kb = members[b.0].items[b.1].stamp / 2 + members[b.0].lastUse / 2
                    return (ka, members[a.0].name, a.1) < (kb, members[b.0].name, b.1)
                }
            var planned: UInt64 = 0
            var picks: [Pick] = []
            for (m, i) in all where planned < need {
                picks.append(Pick(member: members[m].name, item: i))
                planned += members[m].items[i].bytes
            }
            return picks
        }

        static func ratio(_ cached: UInt64, _ quota: UInt64) -> Double {
            quota == 0 ? .infinity : Double(cached) / Double(quota)
        }
    }
}

final class DeviceRecordTests: XCTestCase {
    func testSettingsAndMembersRoundTrip() {
        let settings = DeviceSettings(capacity: 64 << 20, external: 5, low: .percent(10), high: .bytes(9 << 20),
                                      policy: .lru, backing: 2049, generation: 7)
        XCTAssertEqual(DeviceSettings(decoding: settings.encoded), settings)
        let member = DeviceMember(key: "2049:12", processID: 42, container: "/srv/a b", mountpoint: "/srv/a b",
                                  backing: 2049, used: 10, size: 11, purgeable: 3, cacheQuota: 1, lastUse: 99,
                                  activeSeconds: 4, items: [.init(stamp: 5, bytes: 3), .init(stamp: 6, bytes: 0)])
        XCTAssertEqual(DeviceMember(decoding: member.encoded), member)
        XCTAssertNil(DeviceSettings(decoding: Array("generation 1\n".utf8)))
    }

    /// Found by the parser fuzzing (ParserFuzzTests.testDeviceRequests): the device's files
    /// were split into lines by Character, so a container whose path ends in a carriage
    /// return made "\r\n" one Character: its mountpoint line was swallowed and its record,
    /// unreadable, left the device's plans; a request's "bytes N\r" line swallowed its reason.
    func testAValueEndingInACarriageReturnEndsItsLine() throws {
        let member = DeviceMember(key: "2049:12", processID: 42, container: "/srv/app\r", mountpoint: "/mnt/\u{301}m\r",
                                  backing: 2049, used: 10, size: 11, purgeable: 3)
        XCTAssertEqual(DeviceMember(decoding: member.encoded), member)
        let request = try DeviceRecordLines(Array("bytes 10\r\nreason write\n".utf8))
        XCTAssertEqual([request["bytes"], request["reason"]], ["10\r", "write"])
    }

    func testNamesOptionsAndAgreement() throws {
        XCTAssertEqual(try DeviceName.validate("phone-1.a_b"), "phone-1.a_b")
        for (bad, problem) in [("", DeviceNameProblem.empty), ("a/b", .slash), ("..", .parentReference),
                               ("a..b", .parentReference), (".x", .badCharacters), ("a b", .badCharacters)] {
            XCTAssertThrowsError(try DeviceName.validate(bad)) { XCTAssertEqual($0 as? DeviceNameProblem, problem) }
        }
        XCTAssertThrowsError(try MountOptions.parse(["device=a/b"])) {
            XCTAssertEqual(($0 as? OptionError)?.description, "device=a/b: a device name must not contain '/'")
        }
        XCTAssertThrowsError(try MountOptions.parse(["cache_quota=1M"])) {
            XCTAssertEqual($0 as? OptionError, .needsDevice(option: "cache_quota"))
        }
        XCTAssertThrowsError(try MountOptions.parse(["device=p,device_policy=fifo"])) {
            XCTAssertEqual($0 as? OptionError, .invalidPolicy("fifo"))
        }
        let first = try MountOptions.parse(["device=p,capacity=64M,low=4M,high=8M"])
        XCTAssertEqual(first.cacheQuota, nil)
        let device = DeviceSettings(options: first, backing: 1)
        XCTAssertEqual(device.policy, .quota)
        XCTAssertNil(device.disagreement(with: try MountOptions.parse(["device=p,cache_quota=1M"]), backing: 9, name: "p"))
        XCTAssertNil(device.disagreement(with: try MountOptions.parse(["device=p,capacity=64M"]), backing: 9, name: "p"))
        XCTAssertEqual(device.disagreement(with: try MountOptions.parse(["device=p,capacity=32M"]), backing: 1, name: "p"),
                       "device p has capacity=64 MiB, this mount says capacity=32 MiB: leave the option out to take the device's, "
                           + "or change the device with purgefs space")
        XCTAssertNotNil(device.disagreement(with: try MountOptions.parse(["device=p,device_policy=lru"]), backing: 1, name: "p"))
        // A real device is one filesystem.
        let real = DeviceSettings(options: try MountOptions.parse(["device=r"]), backing: 1)
        XCTAssertNotNil(real.disagreement(with: try MountOptions.parse(["device=r"]), backing: 2, name: "r"))
        XCTAssertNil(real.disagreement(with: try MountOptions.parse(["device=r"]), backing: 1, name: "r"))
    }

    func testAChangeMustLeaveSpace() {
        let device = DeviceSettings(capacity: 100, external: 10, low: .bytes(0), high: .bytes(0), policy: .quota, backing: 1)
        XCTAssertNoThrow(try device.validateChange(deviceSize: nil, unpurgeable: 89))
        XCTAssertThrowsError(try device.validateChange(deviceSize: nil, unpurgeable: 90)) {
            XCTAssertEqual($0 as? OptionError, .noSpaceLeft(capacity: "100 B", external: "10 B", used: "90 B"))
        }
    }

    func testHugeItemsAndQuotasSaturate() {
        let huge = DevicePlanner.Member(name: "a", cached: .max, quota: 1, lastUse: .max,
                          items: (0..<3).map { DeviceMember.Item(stamp: .max - UInt64($0), bytes: .max) })
        let other = DevicePlanner.Member(name: "b", cached: .max, quota: 0, lastUse: .max, items: [DeviceMember.Item(stamp: .max, bytes: .max)])
        for policy in [DevicePolicy.quota, .lru] {
            let victims = DevicePlanner.victims(for: .max, members: [huge, other], policy: policy)
            XCTAssertEqual(victims.count, 1, "one item of 2^64 - 1 bytes is enough")
            let all = DevicePlanner.shares(of: victims + victims + victims)
            XCTAssertEqual(all.first?.bytes, .max)
        }
        let quotas = DevicePlanner.quotas(of: [.init(name: "a", cacheQuota: nil, activeSeconds: .max),
                                               .init(name: "b", cacheQuota: nil, activeSeconds: .max)], cacheSpace: .max)
        XCTAssertEqual(quotas.count, 2)
    }
}
