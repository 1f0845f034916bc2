import Foundation
import Glibc
import PurgeCore
import PurgeSys
import XCTest

/// The daemon and its service manager: `purgefs mount -f` sends `READY=1`
/// (with `STATUS=`) to `NOTIFY_SOCKET` once the mount is usable, prints one
/// line on stdout then, and writes `<N>` priorities when stderr is the journal.
final class ServiceNotifyTests: MountedTestCase {
    override var mountsInSetUp: Bool { false }

    /// Starts `purgefs mount -f` with `NOTIFY_SOCKET=address`, waits for the
    /// datagrams up to `READY=1`, and checks the mount is usable at that moment.
    func mountAndAwaitReady(socket: DatagramSocket, address: String) throws -> (Process, [String]) {
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = address
        let out = fixture.base + "/notify.stdout", err = fixture.base + "/notify.stderr"
        let process = try Subprocess.spawn(
            [fixture.binary, "mount", fixture.container, fixture.mountpoint, "-f", "-o", "capacity=32M"],
            stdoutPath: out, stderrPath: err, environment: environment)
        var messages: [String] = []
        let deadline = Date().addingTimeInterval(MountFixture.mountDeadline)
        while !messages.contains(where: { $0.split(separator: "\n").contains("READY=1") }) {
            guard process.isRunning else {
                throw SubprocessError("purgefs ended before READY=1: \(String(describing: try? String(contentsOfFile: err, encoding: .utf8)))")
            }
            guard Date() < deadline else { throw SubprocessError("no READY=1 within \(MountFixture.mountDeadline) s; got \(messages)") }
            if let message = try socket.receive(waitingAtMost: 100) { messages.append(message) }
        }
        // Usable the moment READY=1 arrives: mounted as purgefs, answering.
        XCTAssertEqual(MountTable.mounts(at: fixture.mountpoint).last?.fileSystemType, "fuse.purgefs")
        XCTAssertEqual(getAttr(fixture.mountpoint, pf("capacity")), .value(String(32 << 20)))
        let stdout = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
        XCTAssertEqual(stdout.split(separator: "\n").count, 1, "one line on stdout once ready: \(stdout.debugDescription)")
        XCTAssertTrue(stdout.hasPrefix("purgefs: mounted \(fixture.container) at \(fixture.mountpoint)"), stdout)
        return (process, messages)
    }

    func unmountAndAwaitStopping(_ process: Process, socket: DatagramSocket) throws {
        let result = try Subprocess.run([fixture.binary, "unmount", fixture.mountpoint])
        XCTAssertEqual(result.status, 0, "\(result)")
        XCTAssertTrue(Subprocess.wait(process, timeout: 10), "the daemon ends after the unmount")
        XCTAssertEqual(process.terminationStatus, 0)
        var rest: [String] = []
        while let message = try socket.receive(waitingAtMost: 0) { rest.append(message) }
        XCTAssertTrue(rest.contains { $0.split(separator: "\n").contains("STOPPING=1") }, "\(rest)")
    }

    func testReadyOnAnAbstractSocket() throws {
        let address = "@purgefs-test-\(getpid())-\(UUID().uuidString)"
        let socket = try DatagramSocket.bound(to: address)
        defer { socket.close() }
        let (process, messages) = try mountAndAwaitReady(socket: socket, address: address)
        let ready = try XCTUnwrap(messages.last).split(separator: "\n").map(String.init)
        XCTAssertTrue(ready.contains("STATUS=serving \(fixture.container) at \(fixture.mountpoint)"), "\(ready)")
        XCTAssertTrue(ready.contains("MAINPID=\(process.processIdentifier)"), "\(ready)")
        try unmountAndAwaitStopping(process, socket: socket)
    }

    func testReadyOnASocketPath() throws {
        let address = fixture.base + "/notify.sock"
        let socket = try DatagramSocket.bound(to: address)
        defer { socket.close() }
        let (process, _) = try mountAndAwaitReady(socket: socket, address: address)
        try unmountAndAwaitStopping(process, socket: socket)
    }

    /// Under systemd stderr is the journal (`JOURNAL_STREAM` names it):
    /// lines carry a `<N>` priority instead of `purgefs: `; elsewhere not.
    func testJournalPriorityOnlyWhenStderrIsTheJournal() throws {
        let err = fixture.base + "/journal.stderr"
        let descriptor = open(err, O_WRONLY | O_APPEND | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        XCTAssertGreaterThanOrEqual(descriptor, 0)
        let stderrFile = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        var status = stat()
        XCTAssertEqual(fstat(descriptor, &status), 0)
        for (stream, expected) in [("\(status.st_dev):\(status.st_ino)", "<3>"), ("\(status.st_dev):\(status.st_ino + 1)", "purgefs: ")] {
            XCTAssertEqual(ftruncate(descriptor, 0), 0)
            // Foundation's Process, with stderr the file whose identity JOURNAL_STREAM names.
            let process = Process()
            process.executableURL = URL(fileURLWithPath: fixture.binary)
            process.arguments = ["mount", fixture.base + "/missing", fixture.mountpoint, "-f"]
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            process.standardError = stderrFile
            process.environment = ProcessInfo.processInfo.environment.merging(["JOURNAL_STREAM": stream]) { $1 }
            try process.run()
            XCTAssertTrue(Subprocess.wait(process, timeout: 30))
            XCTAssertEqual(process.terminationStatus, 1)
            let text = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
            XCTAssertTrue(text.hasPrefix(expected + "container \(fixture.base)/missing: "), "JOURNAL_STREAM=\(stream): \(text.debugDescription)")
        }
    }

    func testNotificationAddressesThatCannotBeUsed() throws {
        XCTAssertThrowsError(try DatagramSocket().send("READY=1", to: "@")) { XCTAssertEqual(($0 as? PurgeSys.Errno)?.rawValue, EINVAL) }
        XCTAssertThrowsError(try DatagramSocket().send("READY=1", to: "/" + String(repeating: "x", count: 200))) {
            XCTAssertEqual(($0 as? PurgeSys.Errno)?.rawValue, ENAMETOOLONG)
        }
        XCTAssertEqual(ServiceManager.parseJournalStream("8:1234")?.inode, 1234)
        XCTAssertNil(ServiceManager.parseJournalStream("8:"))
        XCTAssertNil(ServiceManager.parseJournalStream("x"))
    }
}
