import Foundation
import Glibc
import PurgeCore
import XCTest

/// Three containers on one simulated device (`-o device=NAME`): each is its
/// own daemon; the device squeezed through one of them; who lost what
/// checked against a model computed here from what the test wrote.
final class SharedDeviceTests: XCTestCase {
    private var fixtures: [MountFixture] = []
    private var device = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        fixtures = try (0..<3).map { _ in try MountFixture() }
        // Unique: named after the first fixture's fresh directory.
        device = "it-" + (fixtures[0].base as NSString).lastPathComponent
        for fixture in fixtures {
            addTeardownBlock { for problem in fixture.destroy() { XCTFail("teardown: \(problem)") } }
        }
    }

    override func tearDownWithError() throws {
        for fixture in fixtures { for problem in fixture.destroy() { XCTFail("teardown: \(problem)") } }
        // The last member to leave takes the settings with it.
        XCTAssertFalse(FileManager.default.fileExists(atPath: "/run/purgefs/device/\(device)"),
                       "device \(device) outlived its containers")
        try super.tearDownWithError()
    }

    // MARK: what the test writes, and the model

    /// One container's cache files, oldest first (the order they were written, so their purge order).
    struct Container {
        var name: String
        var quota: UInt64
        var files: [String]
    }

    /// Writes `count` files of 1 MiB into `caches/` of fixture `index` through its mount, and 2 MiB into Documents.
    private func fill(_ index: Int, prefix: String, count: Int = 4) -> [String] {
        let mount = fixtures[index].mountpoint
        XCTAssertEqual(mkdir(mount + "/caches", 0o755), 0)
        XCTAssertEqual(mkdir(mount + "/Documents", 0o755), 0)
        XCTAssertEqual(writeBytes(mount + "/Documents/keep", tiled(2 * MiB, seed: UInt64(index))), 0)
        return (1...count).map { i in
            let name = "\(prefix)\(i)"
            XCTAssertEqual(writeBytes(mount + "/caches/" + name, tiled(MiB, seed: UInt64(100 * index + i))), 0)
            return name
        }
    }

    /// The device as `purgefs usage --device --json` shows it.
    private func usage() throws -> [String: Any] {
        let result = try Subprocess.run([fixtures[0].binary, "usage", "--device", device, "--json"])
        XCTAssertEqual(result.status, 0, "\(result)")
        return try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any] ?? [:]
    }

    /// Waits until every member's record shows `purgeable` bytes of caches.
    private func waitForRecords(_ purgeable: [UInt64]) throws {
        let expected = Dictionary(uniqueKeysWithValues: zip(fixtures.prefix(purgeable.count).map(\.container), purgeable))
        var last: [String: UInt64] = [:]
        XCTAssertTrue(eventually(timeout: 10) {
            guard let containers = (try? usage())?["containers"] as? [[String: Any]] else { return false }
            last = Dictionary(uniqueKeysWithValues: containers.map {
                ($0["container"] as? String ?? "", ($0["purgeable"] as? NSNumber)?.uint64Value ?? 0)
            })
            return last == expected
        }, "the members' records never showed \(expected); last \(last)")
    }

    /// Mounts the three containers on the device (the first with `first`, making it; each with its
    /// `cache_quota` in MiB), fills each with four 1 MiB cache files named `prefix1`... through its mount,
    /// and waits for their records.
    private func mountThree(_ first: [String], quotas: [UInt64], prefix: String) throws -> [Container] {
        for index in 0..<3 {
            try fixtures[index].mount(options: ["device=\(device)"] + (index == 0 ? first : []) + ["cache_quota=\(quotas[index])M"])
        }
        let containers = (0..<3).map { Container(name: "c\($0)", quota: quotas[$0] * UInt64(MiB), files: fill($0, prefix: prefix)) }
        try waitForRecords([4, 4, 4].map { $0 * UInt64(MiB) })
        return containers
    }

    /// What is available once every member has seen every record: the same
    /// on each member, and what the device's records add up to.
    private func settledAvailable() throws -> UInt64 {
        var seen: [UInt64] = []
        var report: UInt64 = 0
        XCTAssertTrue(eventually(timeout: 10) {
            report = ((try? usage())?["available"] as? NSNumber)?.uint64Value ?? 0
            seen = fixtures.filter { MountTable.isMounted($0.mountpoint) }.map { numberAttr($0.mountpoint, "available") ?? 0 }
            return seen.allSatisfy { $0 == report }
        }, "members disagree on what is available: \(seen), the device's records say \(report)")
        return report
    }

    /// The model of `quota`: while a container is over its quota, the one
    /// furthest over loses its oldest file, re-ranked after each; then
    /// everyone's files oldest first. Sizes are 1 MiB, so bytes are counts.
    static func quotaVictims(need: UInt64, _ containers: [Container]) -> [String: [String]] {
        var cached = containers.map { UInt64($0.files.count) * UInt64(MiB) }
        var next = containers.map { _ in 0 }
        var freed: UInt64 = 0
        var lost: [String: [String]] = [:]
        func take(_ c: Int) {
            lost[containers[c].name, default: []].append(containers[c].files[next[c]])
            next[c] += 1
            cached[c] -= UInt64(MiB)
            freed += UInt64(MiB)
        }
        while freed < need {
            let over = containers.indices.filter { next[$0] < containers[$0].files.count && cached[$0] > containers[$0].quota }
            guard let c = over.max(by: { Double(cached[$0]) / Double(containers[$0].quota) < Double(cached[$1]) / Double(containers[$1].quota) })
            else { break }
            take(c)
        }
        // Oldest first: containers were filled in order, so theirs in that order.
        for c in containers.indices { while freed < need && next[c] < containers[c].files.count { take(c) } }
        return lost
    }

    private func remaining(_ index: Int) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: fixtures[index].mountpoint + "/caches")) ?? []).sorted()
    }

    private func assertLost(_ expected: [String: [String]], _ all: [[String]], file: StaticString = #filePath, line: UInt = #line) {
        var seen: [[String]] = []
        let matched = eventually(timeout: 10) {
            seen = fixtures.indices.map(remaining)
            return fixtures.indices.allSatisfy { index in
                seen[index] == all[index].filter { file in !(expected["c\(index)"] ?? []).contains(file) }.sorted()
            }
        }
        XCTAssertTrue(matched, "expected lost \(expected), left \(seen)", file: file, line: line)
    }

    // MARK: tests

    func testQuotaPolicyPurgesTheContainerFurthestOverItsQuotaFirst() throws {
        let containers = try mountThree(["capacity=64M", "low=8M", "high=16M", "device_policy=quota"], quotas: [1, 4, 8], prefix: "f")
        for fixture in fixtures {
            XCTAssertEqual(numberAttr(fixture.mountpoint, "device_containers"), 3)
        }
        XCTAssertEqual(numberAttr(fixtures[1].mountpoint, "device_quota"), 4 * UInt64(MiB))
        // Squeeze through the third container: 5 MiB left, below low; the monitor purges up to high.
        let available = try settledAvailable()
        XCTAssertEqual(setAttr(fixtures[2].mountpoint, pf("external"), String(available - 5 * UInt64(MiB))), 0)
        let expected = Self.quotaVictims(need: 11 * UInt64(MiB), containers)
        // c0 (ratio 4) down to its quota, then oldest first: c0's last, all of c1's, then c2's oldest three.
        XCTAssertEqual(expected, ["c0": ["f1", "f2", "f3", "f4"], "c1": ["f1", "f2", "f3", "f4"], "c2": ["f1", "f2", "f3"]])
        assertLost(expected, containers.map(\.files))
        // Every member shows the device's totals, and its metrics carry a device scope.
        XCTAssertTrue(eventually { Set(fixtures.map { numberAttr($0.mountpoint, "device_containers_used") }).count == 1 })
        XCTAssertTrue(eventually { numberAttr(fixtures[1].mountpoint, "device_purgeable") == UInt64(MiB) })
        let metrics = try Subprocess.run([fixtures[0].binary, "metrics", fixtures[1].mountpoint, "--prometheus"])
        XCTAssertEqual(metrics.status, 0, "\(metrics)")
        let (samples, problems) = PrometheusGrammar.parse(metrics.stdout)
        XCTAssertEqual(problems, [])
        let scoped = samples.filter { $0.name.hasPrefix("purgefs_device_") }
        XCTAssertEqual(scoped.first { $0.name == "purgefs_device_containers" }?.value, 3)
        XCTAssertEqual(scoped.first { $0.name == "purgefs_device_containers" }?.labels, ["device": device])
        XCTAssertEqual(scoped.first { $0.name == "purgefs_device_cache_quota_bytes" }?.value, Double(4 * MiB))
        XCTAssertEqual(scoped.first { $0.name == "purgefs_device_capacity_bytes" }?.value, Double(64 * MiB))
        for fixture in fixtures {
            XCTAssertTrue(eventually { (numberAttr(fixture.mountpoint, "available") ?? 0) >= 16 * UInt64(MiB) })
            XCTAssertTrue(eventually { numberAttr(fixture.mountpoint, "external") == available - 5 * UInt64(MiB) })
        }
    }

    func testQuotaOrderIsNotPlainLRU() throws {
        // The newest container holds the most over its quota: it loses first, although its files are the newest.
        let containers = try mountThree(["capacity=64M", "low=8M", "high=12M"], quotas: [8, 8, 1], prefix: "q")
        let available = try settledAvailable()
        XCTAssertEqual(setAttr(fixtures[1].mountpoint, pf("external"), String(available - 7 * UInt64(MiB))), 0)
        let expected = Self.quotaVictims(need: 5 * UInt64(MiB), containers)
        XCTAssertEqual(expected, ["c2": ["q1", "q2", "q3"], "c0": ["q1", "q2"]])
        assertLost(expected, containers.map(\.files))
    }

    func testPinsOpenFilesAndTombstonesHoldOnASharedDevice() throws {
        try fixtures[0].mount(options: ["device=\(device)", "capacity=64M", "low=14M", "high=16M", "cache_quota=1M"])
        try fixtures[1].mount(options: ["device=\(device)", "cache_quota=8M"])
        var files = [fill(0, prefix: "p", count: 6), fill(1, prefix: "p")]
        // The first container, furthest over its quota: p1 pinned, p2 held open, p3 in a tombstone directory.
        let mount = fixtures[0].mountpoint
        XCTAssertEqual(setAttr(mount + "/caches/p1", pf("pinned"), "1"), 0)
        let open = Glibc.open(mount + "/caches/p2", O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(open, 0)
        defer { close(open) }
        XCTAssertEqual(mkdir(mount + "/caches/keep", 0o755), 0)
        XCTAssertEqual(setAttr(mount + "/caches/keep", pf("tombstone"), "1"), 0)
        XCTAssertEqual(rename(mount + "/caches/p3", mount + "/caches/keep/p3"), 0)
        files[0] = ["keep/p3", "p4", "p5", "p6"]
        try waitForRecords([4, 4].map { $0 * UInt64(MiB) })
        let available = try settledAvailable()
        XCTAssertEqual(setAttr(mount, pf("external"), String(available - 13 * UInt64(MiB))), 0)
        // 13 MiB left, below low: 3 MiB to free. Only the first container's candidates go, oldest first (p3 truncated, not deleted), down to its quota.
        let expected = Self.quotaVictims(need: 3 * UInt64(MiB), [Container(name: "c0", quota: UInt64(MiB), files: files[0]),
                                                                 Container(name: "c1", quota: 8 * UInt64(MiB), files: files[1])])
        XCTAssertEqual(expected, ["c0": ["keep/p3", "p4", "p5"]])
        XCTAssertTrue(eventually(timeout: 10) {
            remaining(0) == ["keep", "p1", "p2", "p6"] && remaining(1) == files[1]
        }, "left \(remaining(0)) and \(remaining(1))")
        XCTAssertEqual(fileSize(mount + "/caches/keep/p3"), 0)
        XCTAssertEqual(fileSize(mount + "/caches/p1"), Int64(MiB))
        XCTAssertEqual(fileSize(mount + "/caches/p2"), Int64(MiB))
    }

    func testLRUPolicyAgainstTheModelOfPublishedStamps() throws {
        try fixtures[0].mount(options: ["device=\(device)", "capacity=64M", "low=8M", "high=14M", "device_policy=lru"])
        try fixtures[1].mount(options: ["device=\(device)"])
        try fixtures[2].mount(options: ["device=\(device)"])
        var containers: [Container] = []
        for index in 0..<3 { containers.append(Container(name: "c\(index)", quota: 0, files: fill(index, prefix: "l"))) }
        // The first container is used last: its files, the oldest, weigh its recent use.
        let before = UInt64(Date().timeIntervalSince1970 * 1e9) - 1_000_000_000
        XCTAssertTrue(touchByReading(fixtures[0].mountpoint + "/Documents/keep"))
        try waitForRecords([4, 4, 4].map { $0 * UInt64(MiB) })
        // The members' records (each its purge order's head, oldest first, and its last use) are the model's input.
        var members: [String: DeviceMember] = [:]
        XCTAssertTrue(eventually(timeout: 10) {
            members = [:]
            for name in (try? FileManager.default.contentsOfDirectory(atPath: "/run/purgefs/device/\(device)/members")) ?? []
            where !name.contains(".") {
                guard let data = FileManager.default.contents(atPath: "/run/purgefs/device/\(device)/members/\(name)"),
                      let member = DeviceMember(decoding: Array(data)) else { continue }
                members[member.container] = member
            }
            return members.count == 3 && (members[fixtures[0].container]?.lastUse ?? 0) >= before
        })
        let available = try settledAvailable()
        // Model: every file keyed by (its stamp + its container's last use) / 2, smallest first, until 14 - 6 = 8 MiB.
        var keyed: [(key: UInt64, container: String, file: String)] = []
        for (index, fixture) in fixtures.enumerated() {
            let member = try XCTUnwrap(members[fixture.container])
            XCTAssertEqual(member.items.count, 4)
            for (i, item) in member.items.enumerated() {
                keyed.append((item.stamp / 2 + member.lastUse / 2, "c\(index)", containers[index].files[i]))
            }
        }
        keyed.sort { ($0.key, $0.container) < ($1.key, $1.container) }
        var expected: [String: [String]] = [:]
        for entry in keyed.prefix(8) { expected[entry.container, default: []].append(entry.file) }
        XCTAssertEqual(setAttr(fixtures[0].mountpoint, pf("external"), String(available - 6 * UInt64(MiB))), 0)
        assertLost(expected, containers.map(\.files))
    }

    func testAWriteThatDoesNotFitPurgesOtherContainersFirst() throws {
        // No monitor (low 0): only the write purges.
        let containers = try mountThree(["capacity=40M", "low=0", "high=0"], quotas: [8, 1, 8], prefix: "w")
        let available = try settledAvailable()
        // Needs 2 MiB more than is left: the second container, over its quota, gives its two oldest.
        let size = Int(available) + 2 * MiB
        XCTAssertEqual(writeBytes(fixtures[0].mountpoint + "/Documents/big", tiled(size, seed: 9)), 0)
        XCTAssertEqual(fileSize(fixtures[0].mountpoint + "/Documents/big"), Int64(size))
        let expected = Self.quotaVictims(need: 2 * UInt64(MiB), containers)
        XCTAssertEqual(expected, ["c1": ["w1", "w2"]])
        assertLost(expected, containers.map(\.files))
        let log = readPurgeLog(fixtures[1].container)
        XCTAssertEqual(log.map(\.reason), ["write", "write"])
        // Nothing purgeable can make room for more than the device holds: ENOSPC.
        XCTAssertEqual(writeBytes(fixtures[2].mountpoint + "/Documents/huge", tiled(40 * MiB, seed: 3)), ENOSPC)
    }

    func testKillingTheLeadingDaemonLeavesTheOthersServingAndConsistent() throws {
        let containers = try mountThree(["capacity=64M", "low=14M", "high=16M"], quotas: [1, 4, 8], prefix: "k")
        // Whoever plans for the device holds leader.lock: kill -9 it.
        let leader = try XCTUnwrap(leaderIndex(), "no member holds the device's leader.lock")
        fixtures[leader].killDaemon()
        let living = fixtures.indices.filter { $0 != leader }
        XCTAssertTrue(eventually(timeout: 10) { ((try? usage())?["containers"] as? [Any])?.count == 2 },
                      "the dead member still counts")
        for index in living {
            XCTAssertTrue(eventually { numberAttr(fixtures[index].mountpoint, "device_containers") == 2 })
            XCTAssertEqual(readBytes(fixtures[index].mountpoint + "/Documents/keep")?.count, 2 * MiB)
        }
        // Its usage no longer counts: what is available is the complement of the living's.
        let available = try settledAvailable()
        let used = try XCTUnwrap(numberAttr(fixtures[living[0]].mountpoint, "device_containers_used"))
        XCTAssertEqual(available, 64 * UInt64(MiB) - used)
        // A squeeze is still planned for the device (another member leads now), among the living: 13 MiB left, 3 to free.
        XCTAssertEqual(setAttr(fixtures[living[1]].mountpoint, pf("external"), String(available - 13 * UInt64(MiB))), 0)
        let expected = Self.quotaVictims(need: 3 * UInt64(MiB), living.map { containers[$0] })
        XCTAssertEqual(expected.values.map(\.count).reduce(0, +), 3)
        var seen: [[String]] = []
        XCTAssertTrue(eventually(timeout: 10) {
            seen = living.map(remaining)
            return zip(living, seen).allSatisfy { index, left in
                left == containers[index].files.filter { !(expected["c\(index)"] ?? []).contains($0) }
            }
        }, "expected lost \(expected), left \(seen)")
        // The dead container, remounted, joins again and is consistent (its caches untouched meanwhile).
        try fixtures[leader].mount(options: ["device=\(device)", "cache_quota=\(containers[leader].quota)"])
        XCTAssertEqual(remaining(leader), containers[leader].files)
        XCTAssertTrue(eventually { numberAttr(fixtures[living[0]].mountpoint, "device_containers") == 3 })
        XCTAssertEqual(mountTotals(fixtures[leader].mountpoint),
                       BackingWalk(fixtures[leader].container).totals(of: "", zones: ["Library/Caches", "caches", "tmp"]))
    }

    /// The fixture whose daemon holds the device's `leader.lock`, from /proc/locks.
    private func leaderIndex() -> Int? {
        var status = stat()
        var index: Int?
        _ = eventually {
            guard stat("/run/purgefs/device/\(device)/leader.lock", &status) == 0,
                  let locks = try? String(contentsOfFile: "/proc/locks", encoding: .utf8) else { return false }
            for line in locks.split(separator: "\n") {
                let fields = line.split(separator: " ")
                guard fields.count >= 6, fields[1] == "FLOCK", fields[5].hasSuffix(":\(status.st_ino)"),
                      let pid = pid_t(fields[4]) else { continue }
                index = fixtures.firstIndex { $0.daemonPID == pid }
            }
            return index != nil
        }
        return index
    }

    /// A write through one member shows in the other's `available` and
    /// statfs at once, as on a real shared volume: no wait for a round.
    func testAWriteThroughOneMemberShowsInTheOthersAvailableAtOnce() throws {
        for index in 0..<2 {
            try fixtures[index].mount(options: ["device=\(device)"] + (index == 0 ? ["capacity=64M", "low=0", "high=0"] : []))
        }
        let before = try settledAvailable()
        let writer = fixtures[0].mountpoint, other = fixtures[1].mountpoint
        for round in 1...5 {
            XCTAssertEqual(writeBytes(writer + "/f\(round)", tiled(MiB, seed: UInt64(round))), 0)
            let expected = before - UInt64(round * MiB)
            XCTAssertEqual(numberAttr(writer, "available"), expected, "the writer's own, round \(round)")
            XCTAssertEqual(numberAttr(other, "available"), expected, "the other member's, at once, round \(round)")
            var figures = statvfs()
            XCTAssertEqual(statvfs(other, &figures), 0)
            XCTAssertEqual(UInt64(figures.f_bavail) * UInt64(figures.f_frsize), expected / UInt64(figures.f_frsize) * UInt64(figures.f_frsize),
                           "the other member's statfs, round \(round)")
        }
        XCTAssertEqual(unlink(writer + "/f1"), 0)
        XCTAssertEqual(numberAttr(other, "available"), before - UInt64(4 * MiB), "a removal shows at once too")
    }

    func testBadInputIsRefusedWithOneLine() throws {
        try fixtures[0].mount(options: ["device=\(device)", "capacity=64M", "low=8M", "high=16M"])
        // Options that disagree with the device's.
        var result = try Subprocess.run(fixtures[1].mountArguments(["device=\(device)", "capacity=32M"], foreground: false, inPlace: false))
        XCTAssertEqual(result.status, 1)
        XCTAssertEqual(result.stderrLines, ["purgefs: device \(device) has capacity=64 MiB, this mount says capacity=32 MiB: "
                                            + "leave the option out to take the device's, or change the device with purgefs space"])
        result = try Subprocess.run(fixtures[1].mountArguments(["device=\(device)", "device_policy=lru"], foreground: false, inPlace: false))
        XCTAssertEqual(result.status, 1, "\(result)")
        XCTAssertTrue(MountTable.mounts(at: fixtures[1].mountpoint).isEmpty)
        // Names that are not one plain component.
        for (name, reason) in [("a/b", "must not contain '/'"), ("..", "must not contain '..'"), ("", "a device name is required")] {
            result = try Subprocess.run(fixtures[1].mountArguments(["device=\(name)"], foreground: false, inPlace: false))
            XCTAssertEqual(result.status, 64, "\(result)")
            XCTAssertEqual(result.stderrLines.count, 1, "\(result)")
            XCTAssertTrue(result.stderr.contains(reason), "\(result)")
        }
        // The same container twice on the device (through another mountpoint).
        result = try Subprocess.run([fixtures[0].binary, "mount", fixtures[0].container, fixtures[1].mountpoint, "-o", "device=\(device)"])
        XCTAssertEqual(result.status, 1, "\(result)")
        XCTAssertEqual(result.stderrLines.count, 1, "\(result)")
        XCTAssertTrue(MountTable.mounts(at: fixtures[1].mountpoint).isEmpty)
        // A capacity that leaves no space for what the containers hold outside their caches.
        try fixtures[1].mount(options: ["device=\(device)"])
        _ = fill(1, prefix: "b")
        try waitForRecords([0, 4 * UInt64(MiB)])
        XCTAssertEqual(setAttr(fixtures[0].mountpoint, pf("capacity"), "2M"), EINVAL)
        XCTAssertEqual(numberAttr(fixtures[1].mountpoint, "capacity"), 64 * UInt64(MiB))
        result = try Subprocess.run([fixtures[0].binary, "space", fixtures[1].mountpoint, "--capacity", "2M"])
        XCTAssertNotEqual(result.status, 0, "\(result)")
        XCTAssertEqual(result.stderrLines.count, 1, "\(result)")
        // A change that does fit shows on every member.
        XCTAssertEqual(setAttr(fixtures[1].mountpoint, pf("capacity"), "48M"), 0)
        XCTAssertTrue(eventually { numberAttr(fixtures[0].mountpoint, "capacity") == 48 * UInt64(MiB) })
        result = try Subprocess.run([fixtures[0].binary, "usage", "--device", "no-such-\(device)"])
        XCTAssertEqual(result.stderrLines, ["purgefs: no device no-such-\(device): no container is mounted with -o device=no-such-\(device)"])
    }

    func testARealDeviceIsOneFilesystemAndASimulatedOneIsNot() throws {
        // /dev/shm is tmpfs, the fixtures live on /tmp's filesystem.
        var template = Array("/dev/shm/purgefs-it-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else { throw SubprocessError("mkdtemp in /dev/shm failed") }
        let other = String(cString: template)
        defer { _ = removeTree(other) }
        var here = stat(), there = stat()
        XCTAssertEqual(stat(fixtures[0].container, &here), 0)
        XCTAssertEqual(stat(other, &there), 0)
        XCTAssertNotEqual(here.st_dev, there.st_dev, "/dev/shm must be another filesystem for this test")
        try fixtures[0].mount(options: ["device=\(device)"])
        var result = try Subprocess.run([fixtures[0].binary, "mount", other, fixtures[1].mountpoint, "-o", "device=\(device)"])
        XCTAssertEqual(result.status, 1, "\(result)")
        XCTAssertTrue(result.stderr.contains("another filesystem"), "\(result)")
        XCTAssertTrue(MountTable.mounts(at: fixtures[1].mountpoint).isEmpty)
        // A simulated device is a number: its members may live anywhere.
        let simulated = device + "-s"
        try fixtures[2].mount(options: ["device=\(simulated)", "capacity=64M"])
        result = try Subprocess.run([fixtures[0].binary, "mount", other, fixtures[1].mountpoint, "-o", "device=\(simulated)"])
        XCTAssertEqual(result.status, 0, "\(result)")
        XCTAssertTrue(eventually { numberAttr(fixtures[2].mountpoint, "device_containers") == 2 })
        result = try Subprocess.run(["fusermount3", "-u", fixtures[1].mountpoint])
        XCTAssertEqual(result.status, 0, "\(result)")
    }
}
