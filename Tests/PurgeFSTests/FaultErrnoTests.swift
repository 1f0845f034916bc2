import PurgeCore
import PurgeSys
import XCTest

/// Every errno name a fault rule accepts is one the adapter can answer with
/// (`FaultInjector.admit` falls back to EIO for none).
final class FaultErrnoTests: XCTestCase {
    func testEveryRuleErrnoNameHasItsNumber() {
        for name in FaultAction.errnoNames {
            XCTAssertNotNil(Errno(named: name), name)
        }
        XCTAssertEqual(Errno(named: "EIO"), .ioError)
        XCTAssertEqual(Errno(named: "ENOSPC"), .noSpace)
        XCTAssertNil(Errno(named: "EWHAT"))
    }
}
