import XCTest
@testable import PurgeCommand

final class WaitStatusTests: XCTestCase {
    func testDecoding() {
        XCTAssertEqual(WaitStatus(raw: 0).exitCode, 0)
        XCTAssertEqual(WaitStatus(raw: 1 << 8).exitCode, 1)
        XCTAssertEqual(WaitStatus(raw: 64 << 8).description, "exited with status 64")
        XCTAssertNil(WaitStatus(raw: 9).exitCode)
        XCTAssertEqual(WaitStatus(raw: 9).signal, 9)
        XCTAssertEqual(WaitStatus(raw: 6 | 0x80).signal, 6) // core dumped bit
        XCTAssertTrue(WaitStatus(raw: 9).description.hasPrefix("was killed by signal 9"))
    }

    func testARealChild() throws {
        let pid = try ChildProcess.spawn("/bin/sh", arguments: ["sh", "-c", "exit 3"], environment: [])
        XCTAssertEqual(try ChildProcess.wait(pid).exitCode, 3)
    }
}
