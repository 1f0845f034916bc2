import Foundation
import Glibc
import PurgeSys
import XCTest

/// `purgefs ui` against clients that do not play fair: connections that
/// trickle a request head a byte at a time and never finish it, a `Host`
/// that is not the address (DNS rebinding), and a listen on every address.
/// Loopback TCP only; each client is a raw socket of this test.
final class UILoadTests: MountedTestCase {
    override var mountOptions: [String] { ["capacity=64M"] }

    /// Starts `purgefs ui` and waits until it has printed where it listens: the process, its stdout, its stderr.
    private func startUI(_ listen: [String] = []) throws -> (process: Process, out: String, err: String) {
        let out = fixture.base + "/ui.out", err = fixture.base + "/ui.err"
        let ui = try Subprocess.spawn([fixture.binary, "ui"] + listen + [fixture.mountpoint], stdoutPath: out, stderrPath: err)
        addTeardownBlock { if ui.isRunning { kill(ui.processIdentifier, SIGKILL); Subprocess.wait(ui, timeout: 10) } }
        let deadline = Date().addingTimeInterval(30)
        var text = ""
        while !text.contains("Ctrl-C stops it"), ui.isRunning, Date() < deadline {
            text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
            if !text.contains("Ctrl-C stops it") { usleep(20_000) }
        }
        let errText = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
        guard text.contains("Ctrl-C stops it") else { throw SubprocessError("ui did not start: \(text) \(errText)") }
        return (ui, text, errText)
    }

    /// The port and token of the first URL in `text` whose address is `address`.
    private func portAndToken(_ text: String, address: String = "127.0.0.1") throws -> (UInt16, String) {
        let url = try XCTUnwrap(text.split(whereSeparator: \.isWhitespace).first { $0.hasPrefix("http://\(address):") }, text)
        let rest = url.dropFirst("http://\(address):".count)
        let port = try XCTUnwrap(UInt16(rest.prefix { $0.isNumber }), text)
        let token = try XCTUnwrap(rest.split(separator: "token=").last.map(String.init), text)
        return (port, token)
    }

    private func available() -> String? {
        (try? Paths.extendedAttribute("user.purgefs.available", of: fixture.mountpoint)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// A non-blocking loopback connection to `port` (the connect itself may wait 5 s at most).
    private func connect(_ port: UInt16) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SubprocessError("socket: \(errno)") }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let error = errno
            close(fd)
            throw SubprocessError("connect to 127.0.0.1:\(port): \(error)")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return fd
    }

    private func send(_ fd: Int32, _ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    /// Reads what has arrived on `fd` into `buffer`; true once the server has closed it.
    private func drain(_ fd: Int32, into buffer: inout [UInt8]) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count > 0 { buffer += chunk.prefix(count); continue }
            if count == 0 { return true }
            return errno != EAGAIN && errno != EINTR
        }
    }

    /// One request and its whole response (the server closes after it), or what came before `rounds` waits of 250 ms ran out.
    private func request(_ port: UInt16, _ head: String, rounds: Int = 120) throws -> String {
        let fd = try connect(port)
        defer { close(fd) }
        XCTAssertTrue(send(fd, head))
        var reply: [UInt8] = []
        for _ in 0..<rounds {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&entry, 1, 250)
            if drain(fd, into: &reply) { break }
        }
        return String(decoding: reply, as: UTF8.self)
    }

    /// Forty connections trickle a head a byte at a time and never end it:
    /// the owner's request is answered while they trickle, and each of them
    /// is closed by the server, both before the slow clients give up (120
    /// rounds of a byte each; a round ends early only when the owner's
    /// reply arrives). Before, 16 of them held every slot for as long as
    /// they kept sending, and the owner waited in the backlog.
    func testFortySlowClientsNeitherLockTheOwnerOutNorKeepTheirConnections() throws {
        let (ui, out, _) = try startUI()
        let (port, token) = try portAndToken(out)
        var slow: [Int32] = []
        defer { for fd in slow { close(fd) } }
        for _ in 0..<40 {
            let fd = try connect(port)
            slow.append(fd)
            XCTAssertTrue(send(fd, "G"))
        }
        let owner = try connect(port)
        defer { close(owner) }
        XCTAssertTrue(send(owner, "GET /state?token=\(token) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n"))

        var reply: [UInt8] = []
        var ownerDone = false
        var closed = Set<Int32>()
        let trickle = Array("ET /state HTTP/1.1\r\nX-Slow: ".utf8)
        var round = 0
        while round < 120, !(ownerDone && closed.count == slow.count) {
            // A round waits for the owner's reply or a slow one's end, a quarter second at most.
            var entries = (ownerDone ? [] : [owner]).map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            entries += slow.filter { !closed.contains($0) }.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            _ = poll(&entries, nfds_t(entries.count), 250)
            if !ownerDone { ownerDone = drain(owner, into: &reply) }
            for fd in slow where !closed.contains(fd) {
                var ignored: [UInt8] = []
                let byte = trickle[min(round, trickle.count - 1)]
                let sent = withUnsafeBytes(of: byte) { Glibc.send(fd, $0.baseAddress, 1, Int32(MSG_NOSIGNAL)) }
                if sent < 0 && errno != EAGAIN || drain(fd, into: &ignored) { closed.insert(fd) }
            }
            round += 1
        }
        let text = String(decoding: reply, as: UTF8.self)
        XCTAssertTrue(ownerDone, "the owner was answered while 40 slow clients trickled (\(round) rounds): \(text.prefix(200))")
        XCTAssertTrue(text.hasPrefix("HTTP/1.1 200 OK"), text.prefix(200) + "")
        XCTAssertTrue(text.contains("\"available\""), "the figures")
        XCTAssertEqual(closed.count, slow.count, "every trickling connection was closed by the server within its head deadline")
        XCTAssertTrue(ui.isRunning)
    }

    /// DNS rebinding: a page of another site, its name pointed at 127.0.0.1,
    /// sends that name as Host. Even with the token, 421, and nothing done.
    func testARequestForAnotherHostIsRefusedAndChangesNothing() throws {
        let (_, out, _) = try startUI()
        let (port, token) = try portAndToken(out)
        let before = available()
        let refused = try request(port, "POST /space?available=1048576&token=\(token) HTTP/1.1\r\nHost: rebound.example:\(port)\r\n\r\n")
        XCTAssertTrue(refused.hasPrefix("HTTP/1.1 421"), refused)
        XCTAssertEqual(available(), before, "the space was not set")
        let served = try request(port, "GET /state?token=\(token) HTTP/1.1\r\nHost: localhost:\(port)\r\n\r\n")
        XCTAssertTrue(served.hasPrefix("HTTP/1.1 200"), served)
    }

    /// `--listen 0.0.0.0:0` says it listens on every address, not on
    /// 127.0.0.1 alone, and warns on stderr who can take over the mount.
    func testListeningOnEveryAddressSaysSoAndWarns() throws {
        let (ui, out, err) = try startUI(["--listen", "0.0.0.0:0"])
        let lines = out.split(separator: "\n")
        XCTAssertTrue(lines.count > 1 && lines[1].hasPrefix("  listening on 0.0.0.0:"), out)
        XCTAssertTrue(err.contains("anyone who can reach it and has the token controls the mount"), err)
        let (port, token) = try portAndToken(out)
        XCTAssertTrue(out.contains("listening on 0.0.0.0:\(port),"), out)
        let served = try request(port, "GET /state?token=\(token) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n")
        XCTAssertTrue(served.hasPrefix("HTTP/1.1 200"), served)
        kill(ui.processIdentifier, SIGINT)
        XCTAssertTrue(Subprocess.wait(ui, timeout: 30), "Ctrl-C stops it")
    }
}
