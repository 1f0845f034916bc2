import Glibc
import PurgeSys
import XCTest

final class ChildProcessTests: XCTestCase {
    func testWaitStatusDecoding() {
        XCTAssertEqual(WaitStatus(raw: 0).exitCode, 0)
        XCTAssertEqual(WaitStatus(raw: 1 << 8).exitCode, 1)
        XCTAssertEqual(WaitStatus(raw: 64 << 8).description, "exited with status 64")
        XCTAssertNil(WaitStatus(raw: 9).exitCode)
        XCTAssertEqual(WaitStatus(raw: 9).signal, 9)
        XCTAssertEqual(WaitStatus(raw: 6 | 0x80).signal, 6) // core dumped bit
        XCTAssertTrue(WaitStatus(raw: 9).description.hasPrefix("was killed by signal 9"))
    }

    func testExitStatusOfARealChild() throws {
        let pid = try ChildProcess.spawn("/bin/sh", arguments: ["sh", "-c", "exit 3"], environment: [])
        XCTAssertEqual(try ChildProcess.wait(pid).exitCode, 3)
        XCTAssertThrowsError(try ChildProcess.wait(pid), "reaped already") { XCTAssertEqual($0 as? Errno, Errno(ECHILD)) }
    }

    func testFileActionsEnvironmentAndPathSearch() throws {
        let directory = try TemporaryDirectory()
        try FileDescriptor.open("input", in: directory.descriptor, flags: O_WRONLY | O_CREAT, mode: 0o644).close()
        let output = try FileDescriptor.pipe()
        defer { output.read.closeQuietly() }
        let pid = try ChildProcess.spawn(
            "sh", arguments: ["sh", "-c", "echo \"$GREETING\"; cat; echo err >&2"],
            environment: ["GREETING=hello", "PATH=/usr/bin:/bin"],
            fileActions: [.duplicate(output.write, to: .standardOutput), .duplicate(output.write, to: .standardError),
                          .open(directory.path + "/input", as: .standardInput, flags: OpenFlags.readOnly)],
            searchPath: true)
        try output.write.close()
        XCTAssertEqual(String(decoding: try output.read.readAll(), as: UTF8.self), "hello\nerr\n")
        XCTAssertEqual(try ChildProcess.wait(pid).exitCode, 0)
    }

    func testTheChildStartsInTheDirectoryGiven() throws {
        let directory = try TemporaryDirectory()
        let output = try FileDescriptor.pipe()
        defer { output.read.closeQuietly() }
        let pid = try ChildProcess.spawn("/bin/sh", arguments: ["sh", "-c", "pwd -P"], environment: [],
                                         fileActions: [.duplicate(output.write, to: .standardOutput), .changeDirectory(directory.path)])
        try output.write.close()
        let real = try XCTUnwrap(realpath(directory.path, nil))
        defer { free(real) }
        XCTAssertEqual(String(decoding: try output.read.readAll(), as: UTF8.self), String(cString: real) + "\n")
        XCTAssertEqual(try ChildProcess.wait(pid).exitCode, 0)
    }

    func testTheChildStartsWithNoSignalBlocked() throws {
        // This thread blocks SIGTERM, as a test runner's or a dispatch thread may: the child must not inherit it.
        var blocked = sigset_t(), previous = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGTERM)
        XCTAssertEqual(pthread_sigmask(SIG_BLOCK, &blocked, &previous), 0)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        let output = try FileDescriptor.pipe()
        defer { output.read.closeQuietly() }
        let pid = try ChildProcess.spawn("/bin/sh", arguments: ["sh", "-c", "grep SigBlk /proc/self/status"], environment: [],
                                         fileActions: [.duplicate(output.write, to: .standardOutput)], ownProcessGroup: true)
        try output.write.close()
        XCTAssertEqual(String(decoding: try output.read.readAll(), as: UTF8.self), "SigBlk:\t0000000000000000\n")
        XCTAssertEqual(try ChildProcess.wait(pid).exitCode, 0)
    }

    func testPollReturnsNilWhileTheChildRuns() throws {
        let input = try FileDescriptor.pipe()
        defer { input.read.closeQuietly() }
        let pid = try ChildProcess.spawn("/bin/sh", arguments: ["sh", "-c", "read line; exit 5"], environment: [],
                                         fileActions: [.duplicate(input.read, to: .standardInput)])
        XCTAssertNil(try ChildProcess.poll(pid))
        try input.write.writeAll("go\n")
        try input.write.close()
        XCTAssertEqual(try ChildProcess.wait(pid).exitCode, 5)
    }

    func testAMissingProgramIsENOENT() {
        XCTAssertThrowsError(try ChildProcess.spawn("/nonexistent/program", arguments: ["x"], environment: [])) {
            XCTAssertEqual($0 as? Errno, .noEntry)
        }
    }
}
