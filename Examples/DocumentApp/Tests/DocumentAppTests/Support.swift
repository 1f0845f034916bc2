import Foundation
import Glibc
import PurgeTesting
import Synchronization
import Testing

/// A fresh directory for a container or a remote, under TMPDIR (Foundation's
/// `NSTemporaryDirectory()`, not PurgeKit's `temporaryDirectory`, which is
/// the container's own tmp while a test runs the app on a mount).
struct Scratch {
    let url: URL

    init(_ label: String) throws {
        url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("documentapp-\(label)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(at: url) }
}

/// Every test that runs the app on a mount, one at a time: the container is
/// the process's `PURGEFS_CONTAINER`, and Swift Testing runs suites side by
/// side unless one serialized suite holds them.
@Suite(.serialized) enum AppOnAMount {}

/// The app runs in the mount: PurgeKit reads `PURGEFS_CONTAINER` at each call.
func runningApp<T>(in device: SimulatedDevice, _ body: () async throws -> T) async rethrows -> T {
    setenv("PURGEFS_CONTAINER", device.mountPoint.path, 1)
    defer { unsetenv("PURGEFS_CONTAINER") }
    return try await body()
}

struct Timeout: Error, CustomStringConvertible {
    var description: String
}

/// Polls `condition` until it holds, at most `seconds`.
func waitUntil(_ what: String, seconds: Double = 30, _ condition: () throws -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while try !condition() {
        guard ContinuousClock.now < deadline else { throw Timeout(description: "timed out waiting for \(what)") }
        try await Task.sleep(for: .milliseconds(20))
    }
}

/// A `user.purgefs.*` attribute of a path in the mount, as text; nil when not answered.
func purgefsAttribute(_ name: String, of path: String) -> String? {
    try? SimulatedDevice.attribute(name, of: path)
}

/// Runs the purgefs binary (the one PurgeTesting drives) and returns its exit status.
@discardableResult
func purgefs(_ arguments: [String]) throws -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: try PurgefsBinary.locate().path)
    process.arguments = arguments
    process.standardInput = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    return process.terminationStatus
}

/// An HTTP server on loopback that answers every request with `body`, for
/// URLSession's download task (which needs a real URL: it answers a `data:`
/// URL with no file).
final class LoopbackServer: Sendable {
    let port: UInt16
    private let socket: Int32
    private let body: [UInt8]

    init(body: [UInt8]) throws {
        let descriptor = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Timeout(description: "socket: \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard bound == 0, listen(descriptor, 8) == 0 else { throw Timeout(description: "bind/listen: \(errno)") }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
        socket = descriptor
        self.body = body
        let thread = Thread { [self] in serve() }
        thread.start()
    }

    var url: URL { URL(string: "http://127.0.0.1:\(port)/poster.jpg")! }

    private func serve() {
        while true {
            let client = accept(socket, nil, nil)
            guard client >= 0 else { return }  // closed by stop()
            var request = [UInt8](repeating: 0, count: 4096)
            _ = read(client, &request, request.count)
            let head = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n"
            let response = Array(head.utf8) + body
            var sent = 0
            while sent < response.count {
                let count = response[sent...].withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
                if count <= 0 { break }
                sent += count
            }
            close(client)
        }
    }

    func stop() {
        shutdown(socket, Int32(SHUT_RDWR))
        close(socket)
    }
}

/// What the metrics sample's callbacks saw.
final class SeenMetrics<Size: Sendable, Count: Sendable>: Sendable {
    private let seen = Mutex<(sizes: [Size], counts: [Count])>(([], []))
    func add(size: Size) { seen.withLock { $0.sizes.append(size) } }
    func add(count: Count) { seen.withLock { $0.counts.append(count) } }
    var sizes: [Size] { seen.withLock { $0.sizes } }
    var counts: [Count] { seen.withLock { $0.counts } }
}

/// Expects `body` to throw Foundation's `CocoaError` with `code`.
func expectCocoaError(_ code: CocoaError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) {
    do {
        try body()
        Issue.record("no error; expected CocoaError \(code.rawValue)", sourceLocation: sourceLocation)
    } catch let error as CocoaError {
        #expect(error.code == code, "CocoaError \(error.code.rawValue), expected \(code.rawValue): \(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("\(error); expected CocoaError \(code.rawValue)", sourceLocation: sourceLocation)
    }
}

/// The permission bits of what `url` names.
func permissions(_ url: URL) throws -> Int {
    try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int)
}
