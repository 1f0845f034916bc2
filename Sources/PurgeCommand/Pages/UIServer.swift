import Glibc
import PurgeCore
import PurgeSys

/// The small HTTP/1.1 server `purgefs ui` runs: one thread, one `poll`
/// loop over the listening socket and its connections, every socket
/// non-blocking, so a slow or silent client never holds up another (nor
/// anything of the mount's). Bounded: at most `maxConnections` at once
/// (more wait in the kernel's backlog), a request of at most
/// `maxRequestBytes`, a connection idle for `idleMilliseconds` is closed,
/// and each connection carries one request (`Connection: close`).
///
/// Every request needs the token (`?token=` in its URL): without it, or
/// with another, the answer is 403 and the handler is not called.
final class UIServer {
    struct Request: Equatable {
        var method: String
        /// Without the query.
        var path: String
        var query: [String: String]
    }

    struct Response: Equatable {
        var status: Int
        var contentType: String
        var body: [UInt8]

        static func text(_ status: Int, _ text: String) -> Response {
            Response(status: status, contentType: "text/plain; charset=utf-8", body: Array((text + "\n").utf8))
        }
    }

    static let maxConnections = 16
    static let maxRequestBytes = 16384
    static let idleMilliseconds: UInt64 = 10_000

    let listener: ListeningSocket
    let token: String
    private let handle: (Request) -> Response

    private struct Connection {
        var socket: StreamSocket
        var received: [UInt8] = []
        var reply: [UInt8] = []
        var sent = 0
        var answered = false
        var lastActivity: UInt64
    }

    private var connections: [Connection] = []
    private let clock = ContinuousClock()
    private let started: ContinuousClock.Instant

    init(listener: ListeningSocket, token: String, handle: @escaping (Request) -> Response) {
        self.listener = listener
        self.token = token
        self.handle = handle
        started = clock.now
    }

    private var now: UInt64 {
        let elapsed = started.duration(to: clock.now).components
        return UInt64(max(0, elapsed.seconds)) * 1000 + UInt64(max(0, elapsed.attoseconds)) / 1_000_000_000_000_000
    }

    /// Serves until `stop()` says so (looked at every `tickMilliseconds` at least).
    func serve(tickMilliseconds: Int32 = 200, until stop: () -> Bool) {
        while !stop() {
            var entries: [(FileDescriptor, Int16)] = []
            if connections.count < Self.maxConnections { entries.append((listener.descriptor, Int16(POLLIN))) }
            let listening = !entries.isEmpty
            for connection in connections {
                entries.append((connection.socket.descriptor, Int16(connection.answered ? POLLOUT : POLLIN)))
            }
            guard let ready = try? Readiness.wait(entries, milliseconds: tickMilliseconds) else { continue }
            let offset = listening ? 1 : 0
            for index in connections.indices.reversed() where ready[index + offset] != 0 {
                step(index)
            }
            if listening, ready[0] & Int16(POLLIN) != 0 {
                while connections.count < Self.maxConnections, let socket = try? listener.accept() {
                    connections.append(Connection(socket: socket, lastActivity: now))
                }
            }
            let time = now
            for index in connections.indices.reversed() where time - connections[index].lastActivity >= Self.idleMilliseconds {
                connections[index].socket.close()
                connections.remove(at: index)
            }
        }
        for connection in connections { connection.socket.close() }
        connections.removeAll()
    }

    /// Reads more of a request, or writes more of its reply; closes the connection once done or broken.
    private func step(_ index: Int) {
        var connection = connections[index]
        connection.lastActivity = now
        do throws(Errno) {
            if !connection.answered {
                let room = Self.maxRequestBytes + 1 - connection.received.count
                let count = try connection.socket.receive(into: &connection.received, limit: room)
                if count == 0 {
                    connection.socket.close()
                    connections.remove(at: index)
                    return
                }
                if let response = respond(to: connection.received) {
                    connection.reply = Self.encode(response)
                    connection.answered = true
                }
            }
            if connection.answered {
                connection.sent += try connection.socket.send(connection.reply[connection.sent...])
                if connection.sent >= connection.reply.count {
                    connection.socket.close()
                    connections.remove(at: index)
                    return
                }
            }
            connections[index] = connection
        } catch {
            connection.socket.close()
            connections.remove(at: index)
        }
    }

    /// The response once `received` holds a whole request (its head; a
    /// body is not read, the requests here carry their arguments in the
    /// URL), `nil` while it does not yet.
    func respond(to received: [UInt8]) -> Response? {
        guard let end = Self.endOfHead(received) else {
            return received.count > Self.maxRequestBytes ? .text(431, "request too large") : nil
        }
        guard let request = Self.parse(Array(received[..<end])) else { return .text(400, "bad request") }
        guard let given = request.query["token"], Self.same(given, token) else {
            return .text(403, "forbidden: this purgefs ui needs the token it printed at start (?token=...)")
        }
        return handle(request)
    }

    /// The index where the head's blank line ends.
    static func endOfHead(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 3..<bytes.count where bytes[index - 3] == 13 && bytes[index - 2] == 10 && bytes[index - 1] == 13 && bytes[index] == 10 {
            return index + 1
        }
        return nil
    }

    /// `METHOD TARGET HTTP/1.x`, the target split into its path and its query.
    static func parse(_ head: [UInt8]) -> Request? {
        let text = String(decoding: head, as: UTF8.self)
        guard let line = text.split(separator: "\r\n", maxSplits: 1, omittingEmptySubsequences: false).first else { return nil }
        let words = line.split(separator: " ")
        guard words.count == 3, words[2].hasPrefix("HTTP/1."), words[1].hasPrefix("/") else { return nil }
        let target = words[1]
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        guard let path = percentDecoded(parts[0], plus: false) else { return nil }
        var query: [String: String] = [:]
        if parts.count == 2 {
            for pair in parts[1].split(separator: "&") {
                let field = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard let name = percentDecoded(field[0], plus: true),
                      let value = percentDecoded(field.count == 2 ? field[1] : "", plus: true) else { return nil }
                if query[name] != nil { return nil }
                query[name] = value
            }
        }
        return Request(method: String(words[0]), path: path, query: query)
    }

    /// `%XX` decoded (and `+` as a space in a query); `nil` for a bad escape or bytes that are not UTF-8.
    static func percentDecoded(_ text: Substring, plus: Bool) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
                bytes.append(high << 4 | low)
            } else if plus && byte == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// Compares in time that does not depend on where they differ.
    static func same(_ given: String, _ token: String) -> Bool {
        let a = Array(given.utf8), b = Array(token.utf8)
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }

    static func encode(_ response: Response) -> [UInt8] {
        let reasons = [200: "OK", 400: "Bad Request", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
                       431: "Request Header Fields Too Large", 500: "Internal Server Error"]
        let head = "HTTP/1.1 \(response.status) \(reasons[response.status] ?? "Status")\r\n"
            + "Content-Type: \(response.contentType)\r\nContent-Length: \(response.body.count)\r\n"
            + "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\n"
            + "Content-Security-Policy: default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; frame-ancestors 'none'\r\n"
            + "Connection: close\r\n\r\n"
        return Array(head.utf8) + response.body
    }
}
