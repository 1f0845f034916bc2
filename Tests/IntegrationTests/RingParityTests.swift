import Foundation
import Glibc
import XCTest

/// Every parity test again, with the requests served through FUSE over
/// io_uring (the kernel's `enable_uring` on, purgefs's `uring=pinned` default):
/// the same results and errno values as a native directory, through the
/// ring's own path for requests and replies (`fuse_ring.c`).
final class RingParityTests: ParityTests {
    override func setUpWithError() throws {
        try KernelRing.enable(for: self)
        try super.setUpWithError()
        try KernelRing.requireRing(at: fixture.mountpoint)
    }

    /// What shows the ring served them: the kernel's count of the
    /// completions its rings posted to the daemon (one per request handed
    /// to a ring entry), which grows with the work done through the mount.
    func testRequestsGoThroughTheRing() throws {
        let pid = try XCTUnwrap(fixture.daemonPID)
        let before = try XCTUnwrap(KernelRing.completions(of: pid), "the daemon holds no io_uring")
        let data = pattern(1 << 20, seed: 61)
        for index in 0..<50 {
            XCTAssertEqual(writeBytes(fixture.mountpoint + "/f\(index)", data), 0)
        }
        for index in 0..<50 {
            XCTAssertEqual(readBytes(fixture.mountpoint + "/f\(index)"), data, "file \(index) read back")
            XCTAssertEqual(unlink(fixture.mountpoint + "/f\(index)"), 0)
        }
        let after = try XCTUnwrap(KernelRing.completions(of: pid))
        // Each file: lookup, create, writes, flush, release, open, reads, unlink.
        XCTAssertGreaterThan(after - before, 50 * 6, "requests served through the ring")
        if sysconf(Int32(_SC_NPROCESSORS_ONLN)) > 1 {
            XCTAssertEqual(KernelRing.threadsOnOneCPU(of: pid), KernelRing.rings(of: pid),
                           "by default (uring=pinned) each ring's thread stays on its CPU")
        }
    }
}

extension RingParityTests {
    /// Stopped (`SIGTERM`) while a process holds a file open: the daemon
    /// unmounts, ends its ring threads (the kernel cancels their waiting
    /// entries), closes the connection and exits; the holder's next request
    /// gets an error, not a wait.
    func testStoppingTheDaemonLeavesNoRequestWaiting() throws {
        let path = fixture.mountpoint + "/held"
        XCTAssertEqual(writeBytes(path, pattern(4096, seed: 63)), 0)
        let go = fixture.base + "/go", output = fixture.base + "/holder.out"
        // fsync always reaches the daemon (a read may be served from the page cache).
        let script = """
            import os, sys, time
            fd = os.open(sys.argv[1], os.O_RDONLY)
            print("open", flush=True)
            while not os.path.exists(sys.argv[2]): time.sleep(0.02)
            try:
                os.fsync(fd); print("answered")
            except OSError as error:
                print("error", error.errno)
            """
        let holder = try Subprocess.spawn(["python3", "-c", script, path, go], stdoutPath: output, stderrPath: output + ".err")
        XCTAssertTrue(eventually(timeout: 10) { (try? String(contentsOfFile: output, encoding: .utf8))?.contains("open") == true })
        let daemon = try XCTUnwrap(fixture.daemon)
        kill(daemon.processIdentifier, SIGTERM)
        XCTAssertTrue(Subprocess.wait(daemon, timeout: 15), "the daemon exits while a file is held open")
        XCTAssertTrue(FileManager.default.createFile(atPath: go, contents: nil))
        XCTAssertTrue(Subprocess.wait(holder, timeout: 15), "the holder's fsync got an answer")
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        XCTAssertTrue(text.contains("error \(ENOTCONN)"), "the held file's request after the daemon left: \(text)")
    }
}

/// A mount made while the kernel offers the ring, with a file written and
/// read back through it before each test looks at the daemon.
class RingMountTestCase: MountedTestCase {
    /// Whether the mount made in set-up must come through the ring.
    var expectsRing: Bool { true }

    override func setUpWithError() throws {
        try KernelRing.enable(for: self)
        try super.setUpWithError()
        if mountsInSetUp && expectsRing { try KernelRing.requireRing(at: fixture.mountpoint) }
    }

    /// Writes `size` bytes through the mount, reads them back, and returns the daemon's pid.
    func roundTrip(size: Int, seed: UInt64) throws -> pid_t {
        let data = pattern(size, seed: seed)
        XCTAssertEqual(writeBytes(fixture.mountpoint + "/f", data), 0)
        XCTAssertEqual(readBytes(fixture.mountpoint + "/f"), data)
        return try XCTUnwrap(fixture.daemonPID)
    }
}

/// `uring=pinned` and `uring=on`: the ring serves, its threads kept on
/// their queue's CPU or free to run on any.
final class RingPinnedTests: RingMountTestCase {
    override var mountOptions: [String] { ["uring=pinned"] }

    func testRingThreadsArePinnedAndServe() throws {
        try assertServes(pinnedThreads: { pid in KernelRing.rings(of: pid) }, "one pinned thread a ring")
        XCTAssertEqual(KernelRing.transport(at: fixture.mountpoint), KernelRing.ringTransport(pinned: true))
    }
}

final class RingUnpinnedTests: RingMountTestCase {
    override var mountOptions: [String] { ["uring=on"] }

    func testRingThreadsAreFreeToMoveAndServe() throws {
        try assertServes(pinnedThreads: { _ in 0 }, "uring=on leaves the ring's threads free to move")
        XCTAssertEqual(KernelRing.transport(at: fixture.mountpoint), KernelRing.ringTransport(pinned: false))
    }
}

extension RingMountTestCase {
    /// The ring served a round trip, and as many of the daemon's threads
    /// are held to one CPU as `pinnedThreads` says (where there are two CPUs).
    func assertServes(pinnedThreads: (pid_t) -> Int, _ message: String,
                      file: StaticString = #filePath, line: UInt = #line) throws {
        let pid = try roundTrip(size: 256 << 10, seed: 64)
        XCTAssertGreaterThan(try XCTUnwrap(KernelRing.completions(of: pid), "the daemon holds no io_uring"), 0,
                             file: file, line: line)
        if sysconf(Int32(_SC_NPROCESSORS_ONLN)) > 1 {
            XCTAssertEqual(KernelRing.threadsOnOneCPU(of: pid), pinnedThreads(pid), message, file: file, line: line)
        }
    }
}

/// `uring=off`: the same kernel offers the ring, the daemon declines it.
final class RingDeclinedTests: RingMountTestCase {
    override var mountOptions: [String] { ["uring=off"] }
    override var expectsRing: Bool { false }

    func testUringOffServesThroughTheDevice() throws {
        let pid = try roundTrip(size: 64 << 10, seed: 62)
        XCTAssertNil(KernelRing.completions(of: pid), "a daemon told uring=off holds no io_uring")
        XCTAssertEqual(KernelRing.transport(at: fixture.mountpoint), "/dev/fuse")
        XCTAssertTrue(daemonLog().contains("requests come through /dev/fuse\n"), daemonLog())
    }
}

/// The ring refused: by a kernel that does not offer it (its switch off),
/// or entry by entry (`PURGEFS_RING_REFUSALS` sends each entry's first
/// registrations malformed, which the kernel refuses: a failed completion,
/// as a failed commit is). An entry whose command failed registers again,
/// so its CPU's queue keeps its threads; while every entry is refused the
/// kernel sends requests through /dev/fuse, and nothing waits.
final class RingRefusalTests: RingMountTestCase {
    override var mountsInSetUp: Bool { false }

    private func mount(refusals: Int, options extra: [String] = []) throws {
        try fixture.mount(options: mountOptions + extra, launcher: ["env", "PURGEFS_RING_REFUSALS=\(refusals)"])
    }

    /// Each entry's first two registrations refused: each registers again
    /// and serves (before, a thread left its loop at the first failure,
    /// its CPU's queue lost it, and the ring never served).
    func testAnEntryWhoseCommandFailedRegistersAgainAndServes() throws {
        try mount(refusals: 2)
        let m = fixture.mountpoint
        XCTAssertTrue(eventually(timeout: 10) { KernelRing.transport(at: m) == KernelRing.ringTransport() },
                      "the ring never served: \(KernelRing.transport(at: m))")
        let pid = try XCTUnwrap(fixture.daemonPID)
        let before = try XCTUnwrap(KernelRing.completions(of: pid), "the daemon holds no io_uring")
        for index in 0..<20 {
            XCTAssertEqual(writeBytes(m + "/f\(index)", pattern(64 << 10, seed: UInt64(index))), 0)
            XCTAssertEqual(readBytes(m + "/f\(index)"), pattern(64 << 10, seed: UInt64(index)))
        }
        let after = try XCTUnwrap(KernelRing.completions(of: pid))
        XCTAssertGreaterThan(after - before, 20 * 4, "requests served through the ring")
        let log = daemonLog()
        XCTAssertTrue(log.contains("ring: a registration of queue 0 failed (Invalid argument); its entry registers again"), log)
        XCTAssertTrue(log.contains("serves again, after 2 failed commands"), log)
    }

    /// Every registration refused: the mount serves through /dev/fuse, says
    /// so (at mount and in the attribute), and its large reads are still
    /// spliced (libfuse's splice pipes appear in the daemon).
    func testARingTheKernelRefusesLeavesRequestsOnTheDevice() throws {
        // passthrough=off: a passed-through read goes straight to the backing
        // file and never reaches the daemon's splice, which this test looks for.
        try mount(refusals: 1_000_000, options: ["passthrough=off"])
        let m = fixture.mountpoint
        let refused = "/dev/fuse (io_uring refused: the kernel refused its entries: Invalid argument)"
        XCTAssertEqual(KernelRing.transport(at: m), refused)
        XCTAssertTrue(daemonLog().contains("requests come through \(refused)\n"), daemonLog())
        let data = pattern(4 << 20, seed: 65)
        XCTAssertEqual(writeBytes(m + "/big", data), 0)  // write-only: direct I/O, nothing cached
        let pid = try XCTUnwrap(fixture.daemonPID)
        let pipesBefore = Self.pipes(of: pid)
        XCTAssertEqual(readBytes(m + "/big"), data)
        XCTAssertGreaterThan(Self.pipes(of: pid), pipesBefore, "a large read spliced through a pipe")
    }

    /// The switch off: the kernel does not offer the ring, and the mount says so.
    func testAKernelThatDoesNotOfferTheRingIsNamed() throws {
        try KernelRing.disable(for: self)
        try mount(refusals: 0)
        let expected = "/dev/fuse (io_uring refused: the kernel does not offer it (\(KernelRing.switchPath) is N))"
        XCTAssertEqual(KernelRing.transport(at: fixture.mountpoint), expected)
        XCTAssertTrue(daemonLog().contains("requests come through \(expected)\n"), daemonLog())
        XCTAssertNil(KernelRing.completions(of: try XCTUnwrap(fixture.daemonPID)), "a ring not offered is not made")
    }

    private static func pipes(of pid: pid_t) -> Int {
        openDescriptors(of: pid).filter { $0.target.hasPrefix("pipe:") }.count
    }
}

extension RingMountTestCase {
    /// The daemon's stderr (the fixture mounts in the foreground).
    func daemonLog() -> String { fixture.daemonStderrText() }
}
