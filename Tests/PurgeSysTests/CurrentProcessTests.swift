import Foundation
import Glibc
import PurgeSys
import Synchronization
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

    func testIdentityMatchesLibc() throws {
        XCTAssertEqual(CurrentProcess.id.rawValue, getpid())
        XCTAssertEqual(CurrentProcess.effectiveGroupID, getegid())
        var groups = [gid_t](repeating: 0, count: Int(getgroups(0, nil)))
        groups = Array(groups.prefix(Int(getgroups(Int32(groups.count), &groups))))
        XCTAssertEqual(try CurrentProcess.supplementaryGroups(), groups)
    }

    func testFileCreationMaskReturnsThePreviousOne() {
        let before = CurrentProcess.setFileCreationMask(0o027)
        defer { CurrentProcess.setFileCreationMask(before) }
        XCTAssertEqual(CurrentProcess.setFileCreationMask(0o022), 0o027)
    }

    func testPipeIsNoTerminal() throws {
        let pipe = try FileDescriptor.pipe()
        defer { pipe.read.closeQuietly(); pipe.write.closeQuietly() }
        XCTAssertFalse(pipe.read.isTerminal)
        XCTAssertFalse(FileDescriptor(rawValue: -1).isTerminal)
    }

    /// On a thread of its own: the file-system uid and gid change for that
    /// thread, what it creates belongs to them, and root takes its own back.
    func testThreadFileSystemIdentity() throws {
        try XCTSkipUnless(geteuid() == 0, "only root may take on another identity")
        let directory = try TemporaryDirectory()
        XCTAssertEqual(chmod(directory.path, 0o777), 0)
        let folder = directory.descriptor
        let outcome = OutcomeBox()
        let thread = Thread {
            do throws(Errno) {
                try CurrentThread.setSupplementaryGroups([65534])
                try CurrentThread.setFileSystemGroup(65534)
                try CurrentThread.setFileSystemUser(65534)
                let file = try FileDescriptor.open("made", in: folder, flags: O_WRONLY | O_CREAT, mode: 0o644)
                try file.close()
                try CurrentThread.setFileSystemUser(0)
                try CurrentThread.setFileSystemGroup(0)
                try CurrentThread.setSupplementaryGroups([0])
                outcome.set(nil)
            } catch {
                outcome.set(error)
            }
        }
        thread.start()
        XCTAssertTrue(outcome.wait(), "the thread did not finish")
        XCTAssertNil(outcome.error)
        var status = stat()
        XCTAssertEqual(lstat(directory.path + "/made", &status), 0)
        XCTAssertEqual([status.st_uid, status.st_gid], [65534, 65534])
        XCTAssertEqual(geteuid(), 0, "the process keeps its identity")
    }
}

/// What a helper thread reports back.
private final class OutcomeBox: Sendable {
    private let state = Mutex<(done: Bool, error: Errno?)>((false, nil))
    private let finished = DispatchSemaphore(value: 0)

    var error: Errno? { state.withLock { $0.error } }

    func set(_ error: Errno?) {
        state.withLock { $0 = (true, error) }
        finished.signal()
    }

    func wait() -> Bool { finished.wait(timeout: .now() + 10) == .success }
}
