import Glibc
import PurgeSys
import XCTest

final class CurrentProcessTests: XCTestCase {
    func testEnvironmentValueAndRemoval() throws {
        let name = "PURGESYS_TEST_\(getpid())"
        setenv(name, "a=b", 1)
        XCTAssertEqual(CurrentProcess.environmentValue(name), "a=b")
        XCTAssertTrue(CurrentProcess.environment.contains("\(name)=a=b"))
        try CurrentProcess.removeEnvironmentValue(name)
        XCTAssertNil(CurrentProcess.environmentValue(name))
        XCTAssertFalse(CurrentProcess.environment.contains { $0.hasPrefix(name + "=") })
    }

    func testMarkDescriptorsCloseOnExecFromALowestNumber() throws {
        let pipe = try FileDescriptor.pipe()
        defer { pipe.read.closeQuietly(); pipe.write.closeQuietly() }
        let low = FileDescriptor(rawValue: dup(pipe.read.rawValue))
        let high = FileDescriptor(rawValue: dup(pipe.write.rawValue))
        defer { low.closeQuietly(); high.closeQuietly() }
        XCTAssertLessThan(low.rawValue, high.rawValue)
        CurrentProcess.markDescriptorsCloseOnExec(from: high.rawValue)
        XCTAssertFalse(try low.isCloseOnExec())
        XCTAssertTrue(try high.isCloseOnExec())
    }

    func testEffectiveUserIDMatchesGeteuid() {
        XCTAssertEqual(CurrentProcess.effectiveUserID, geteuid())
    }
}
