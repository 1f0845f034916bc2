import PurgeCore
import XCTest

/// The pointer a mount with `state=DIR` leaves in the container's own `.purgefs`.
final class StatePointerTests: XCTestCase {
    func testStatePointer() {
        XCTAssertEqual(StatePointer.decoded(StatePointer.encoded("/var/lib/app state")), "/var/lib/app state")
        XCTAssertEqual(StatePointer.decoded(Array("/x//y/\n".utf8)), "/x/y")
        XCTAssertNil(StatePointer.decoded(Array("relative\n".utf8)))
        XCTAssertNil(StatePointer.decoded(Array("/a\n/b\n".utf8)))
        XCTAssertNil(StatePointer.decoded([]))
    }
}
