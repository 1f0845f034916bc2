internal import CLinux
import Foundation
import Glibc
import Synchronization
import XCTest

/// Opens and evictions of the same documents at once: readers and writers
/// hammer uploaded documents while evictions run, by hand and by the
/// monitor's `optimize_storage`, and every byte read is checked against
/// what was written. An open either sees the whole file or waits for its
/// download; it never sees the hole an eviction leaves. Against a
/// directory here, and rclone's servers in the subclasses below.
class CloudEvictionRaceTests: CloudTestCase {
    override func prepareContainer() throws {
        try super.prepareContainer()
        makeDirectories(fixture.container, ["Documents"])
        XCTAssertEqual(mkdir(remote, 0o755), 0)
    }

    static let size = 512 << 10

    func testOpensDuringManualEvictionsSeeEveryByte() throws {
        try fixture.mount(options: cloudOptions())
        try hammer(readOnly: 3, written: 2, until: 30) { documents, stopped in
            while !stopped() {
                for path in documents { setAttr(path, pf("evict"), "1") }  // EBUSY while open or changed
            }
        }
    }

    func testOpensDuringTheMonitorsEvictionsSeeEveryByte() throws {
        // Room for four of the five documents, fewer with the writer's
        // changes not uploaded yet: each download evicts another, and the
        // monitor evicts below the low mark.
        try fixture.mount(options: cloudOptions(["optimize_storage", "capacity=2M", "low=256K", "high=512K"]))
        try hammer(readOnly: 4, written: 1, pressure: true, until: 20) { _, _ in }
        let reasons = Set(readPurgeLog(fixture.container).filter { $0.action == "evict" }.map(\.reason))
        XCTAssertTrue(reasons.isSubset(of: ["monitor", "write"]), "the tier evicted on its own: \(reasons)")
    }

    /// Writes `readOnly` documents that only readers open and `written`
    /// that one writer each rewrites, waits for their uploads, then runs
    /// two readers and the writers alongside `evicting` (given every
    /// document and what says when to stop) until the purge log has
    /// `evictions` evictions, enough for many to meet an open (or 60 s
    /// have passed: a failure).
    /// `pressure`: the mount's capacity holds only some of the documents,
    /// so they are written one at a time, each uploaded before the next.
    private func hammer(readOnly: Int, written: Int, pressure: Bool = false, until evictions: Int,
                        evicting: @escaping @Sendable ([String], @Sendable () -> Bool) -> Void) throws {
        let m = fixture.mountpoint
        let fixed = (0..<readOnly).map { m + "/Documents/read-\($0)" }
        let rewritten = (0..<written).map { m + "/Documents/written-\($0)" }
        for (index, path) in (fixed + rewritten).enumerated() {
            XCTAssertEqual(writeBytes(path, tiled(Self.size, seed: UInt64(index))), 0, path)
            if pressure { waitUploaded(path) }
        }
        for path in fixed + rewritten { waitUploaded(path) }

        let failures = Mutex<[String]>([])
        let reads = Atomic<Int>(0)
        // Under pressure an open may find no room for its download: refused, never a hole.
        let noRoom = Atomic<Int>(0)
        let note = { @Sendable (problem: String) in
            if pressure && problem.hasPrefix("open ") && problem.hasSuffix(": ENOSPC") {
                noRoom.add(1, ordering: .relaxed)
            } else {
                failures.withLock { $0.append(problem) }
            }
        }
        let stop = Atomic<Bool>(false)
        let group = DispatchGroup()
        let everything = fixed + rewritten
        DispatchQueue.global().async(group: group) { evicting(everything) { stop.load(ordering: .relaxed) } }
        for reader in 0..<2 {
            DispatchQueue.global().async(group: group) {
                var turn = reader
                while !stop.load(ordering: .relaxed) {
                    let index = turn % fixed.count
                    // Every other read bypasses the kernel's page cache: each byte then comes from the daemon.
                    if let problem = Self.check(fixed[index], against: tiled(Self.size, seed: UInt64(index)), direct: turn % 2 == 0) {
                        note(problem)
                    }
                    reads.add(1, ordering: .relaxed)
                    turn += 1
                }
            }
        }
        for (number, path) in rewritten.enumerated() {
            DispatchQueue.global().async(group: group) {
                var version: UInt64 = 0
                var expected = tiled(Self.size, seed: UInt64(readOnly + number))
                while !stop.load(ordering: .relaxed) {
                    version += 1
                    let next = tiled(Self.size, seed: 1000 * UInt64(number + 1) + version)
                    if let problem = Self.overwrite(path, with: next) {
                        note(problem)
                        continue
                    }
                    expected = next
                    // Read it back until it is uploaded (evictable again), then write the next version.
                    var turn = 0
                    repeat {
                        if let problem = Self.check(path, against: expected, direct: turn % 2 == 0) { note(problem) }
                        reads.add(1, ordering: .relaxed)
                        turn += 1
                    } while !stop.load(ordering: .relaxed) && (turn < 4 || getAttr(path, pf("uploaded")) != .value("1"))
                }
            }
        }
        let enough = eventually(timeout: 60) {
            readPurgeLog(fixture.container).filter { $0.action == "evict" }.count >= evictions
        }
        stop.store(true, ordering: .relaxed)
        let log = readPurgeLog(fixture.container).map { "\($0.reason) \($0.action)" }
        XCTAssertTrue(enough, "\(evictions) evictions while the documents were opened; the log: \(Dictionary(log.map { ($0, 1) }, uniquingKeysWith: +))")
        XCTAssertEqual(group.wait(timeout: .now() + 60), .success, "the readers, writers and evictions finish")
        let seen = failures.withLock { $0 }
        XCTAssertEqual(seen.count, 0, "first: \(seen.prefix(3)), last: \(seen.suffix(2))")
        XCTAssertGreaterThan(reads.load(ordering: .relaxed) - noRoom.load(ordering: .relaxed), 20, "the readers read")
        for (index, path) in fixed.enumerated() {
            XCTAssertTrue(remoteCopy("Documents/" + (path as NSString).lastPathComponent) == tiled(Self.size, seed: UInt64(index)), "the remote copy of \(path) is whole")
        }
    }

    /// Reads `path` whole (through the page cache, or with `O_DIRECT`);
    /// nil when it holds `expected`, else what went wrong.
    static func check(_ path: String, against expected: [UInt8], direct: Bool) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | (direct ? clinux_O_DIRECT : 0))
        guard fd >= 0 else { return "open \(path): \(Errno.name(errno))" }
        defer { close(fd) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: expected.count + 4096, alignment: 4096)
        defer { buffer.deallocate() }
        var done = 0
        while true {
            let n = read(fd, buffer.baseAddress! + done, buffer.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                return "read \(path) at \(done): \(Errno.name(errno))"
            }
            if n == 0 { break }
            done += n
        }
        guard done == expected.count else { return "\(path): read \(done) bytes of \(expected.count)" }
        let read = UnsafeRawBufferPointer(rebasing: buffer[..<done])
        guard let first = expected.indices.first(where: { read[$0] != expected[$0] }) else { return nil }
        let zeros = expected.indices[first...].prefix { read[$0] == 0 }.count
        return "\(path)\(direct ? " (O_DIRECT)" : ""): byte \(first) differs (\(zeros) zero bytes from there)"
    }

    /// Overwrites `path` in place (no truncation: the same size), with
    /// `bytes`; nil on success.
    static func overwrite(_ path: String, with bytes: [UInt8]) -> String? {
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return "open \(path) for writing: \(Errno.name(errno))" }
        let written = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        let code = errno
        guard close(fd) == 0, written == bytes.count else { return "write \(path): \(written) bytes, \(Errno.name(code))" }
        return nil
    }
}

/// The races again against `rclone serve s3` and `rclone serve webdav`
/// (about 14 s each on 2 cores). Linux's test discovery lists a subclass
/// only with a test of its own, so each names an inherited one again.
final class CloudEvictionRaceS3Tests: CloudEvictionRaceTests {
    override class var remoteKind: CloudRemoteKind { .s3 }
    override func testOpensDuringManualEvictionsSeeEveryByte() throws { try super.testOpensDuringManualEvictionsSeeEveryByte() }
}

final class CloudEvictionRaceWebDAVTests: CloudEvictionRaceTests {
    override class var remoteKind: CloudRemoteKind { .webdav }
    override func testOpensDuringManualEvictionsSeeEveryByte() throws { try super.testOpensDuringManualEvictionsSeeEveryByte() }
}
