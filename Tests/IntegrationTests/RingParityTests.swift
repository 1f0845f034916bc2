import Foundation
import Glibc
import XCTest

/// Every parity test again, with the requests served through FUSE over
/// io_uring (the kernel's `enable_uring` on, purgefs's `uring=on` default):
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
    }
}

/// `uring=off`: the same kernel offers the ring, the daemon declines it.
final class RingDeclinedTests: MountedTestCase {
    override var mountOptions: [String] { ["uring=off"] }

    override func setUpWithError() throws {
        try KernelRing.enable(for: self)
        try super.setUpWithError()
    }

    func testUringOffServesThroughTheDevice() throws {
        let data = pattern(64 << 10, seed: 62)
        XCTAssertEqual(writeBytes(fixture.mountpoint + "/f", data), 0)
        XCTAssertEqual(readBytes(fixture.mountpoint + "/f"), data)
        let pid = try XCTUnwrap(fixture.daemonPID)
        XCTAssertNil(KernelRing.completions(of: pid), "a daemon told uring=off holds no io_uring")
    }
}
