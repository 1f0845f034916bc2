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
    override func setUpWithError() throws {
        try KernelRing.enable(for: self)
        try super.setUpWithError()
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
    }
}

final class RingUnpinnedTests: RingMountTestCase {
    override var mountOptions: [String] { ["uring=on"] }

    func testRingThreadsAreFreeToMoveAndServe() throws {
        try assertServes(pinnedThreads: { _ in 0 }, "uring=on leaves the ring's threads free to move")
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

    func testUringOffServesThroughTheDevice() throws {
        let pid = try roundTrip(size: 64 << 10, seed: 62)
        XCTAssertNil(KernelRing.completions(of: pid), "a daemon told uring=off holds no io_uring")
    }
}
