import Glibc
import PurgeSys
import XCTest

/// Unix datagrams as sd_notify(3) sends them: to a path, or to an abstract
/// name written `@name`.
final class DatagramSocketTests: XCTestCase {
    func testSendToAPath() throws {
        let directory = try TemporaryDirectory()
        let address = directory.path + "/notify"
        let receiver = try DatagramSocket.bound(to: address)
        defer { receiver.close() }
        let sender = try DatagramSocket()
        defer { sender.close() }
        try sender.send("READY=1\nSTATUS=serving", to: address)
        XCTAssertEqual(try receiver.receive(waitingAtMost: 5000), "READY=1\nSTATUS=serving")
        XCTAssertNil(try receiver.receive(waitingAtMost: 0), "one datagram, received once")
    }

    func testSendToAnAbstractName() throws {
        let address = "@purgesys-test-\(getpid())"
        let receiver = try DatagramSocket.bound(to: address)
        defer { receiver.close() }
        // The abstract name is not a file.
        XCTAssertFalse(Paths.exists(String(address.dropFirst())))
        let sender = try DatagramSocket()
        defer { sender.close() }
        try sender.send("READY=1", to: address)
        XCTAssertEqual(try receiver.receive(waitingAtMost: 5000), "READY=1")
        // A name that is a prefix of the bound one is another name.
        XCTAssertThrowsError(try sender.send("READY=1", to: String(address.dropLast()))) {
            XCTAssertEqual(($0 as? Errno)?.rawValue, ECONNREFUSED)
        }
    }

    func testNobodyListening() throws {
        let directory = try TemporaryDirectory()
        let sender = try DatagramSocket()
        defer { sender.close() }
        XCTAssertThrowsError(try sender.send("READY=1", to: directory.path + "/missing")) {
            XCTAssertEqual(($0 as? Errno)?.rawValue, ENOENT)
        }
    }
}
