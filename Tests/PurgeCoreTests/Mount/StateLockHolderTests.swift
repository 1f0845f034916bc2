import PurgeCore
import XCTest

/// What the daemon writes into its state directory's lock file, and the
/// one line a refused mount shows.
final class StateLockHolderTests: XCTestCase {
    func testRoundTrip() {
        let holder = StateLockHolder(processID: 4242, container: "/srv/my app", mountpoint: "/srv/view")
        XCTAssertEqual(StateLockHolder(decoding: holder.encoded), holder)
        XCTAssertEqual(String(decoding: holder.encoded, as: UTF8.self), "pid 4242\ncontainer /srv/my app\nmountpoint /srv/view\n")
    }

    func testAHolderThatHasNotWrittenYetIsNobody() {
        XCTAssertNil(StateLockHolder(decoding: []))
        XCTAssertNil(StateLockHolder(decoding: Array("pid 12\ncontainer /c\n".utf8)))
        XCTAssertNil(StateLockHolder(decoding: Array("pid x\ncontainer /c\nmountpoint /m\n".utf8)))
    }

    func testRefusalNamesTheMountAndItsDaemon() {
        let holder = StateLockHolder(processID: 77, container: "/srv/app", mountpoint: "/srv/view")
        XCTAssertEqual(holder.refusal(container: "/srv/app", stateDirectory: "/srv/app/.purgefs"),
                       "container /srv/app is already mounted at /srv/view (pid 77): one daemon per container (purgefs unmount /srv/view first)")
        XCTAssertEqual(holder.refusal(container: "/srv/other", stateDirectory: "/var/lib/x"),
                       "state directory /var/lib/x is in use by the mount of /srv/app at /srv/view (pid 77): give this container a state= of its own")
    }
}
