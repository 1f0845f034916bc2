import Glibc
import PurgeCore
import PurgeSys

/// The small HTTP/1.1 server `purgefs ui` runs: one thread, one `poll`
/// loop over the listening socket and its connections, every socket
/// non-blocking, so a slow or silent client never holds up another (nor
/// anything of the mount's). Each connection carries one request
/// (`Connection: close`) and is closed once answered.
///
/// A slot is not something a client without the token can keep: a
/// connection has `headMilliseconds` from its accept to send a whole
/// request head (at most `maxRequestBytes`), and is closed then whatever it
/// has trickled; the listener is always accepted from, and with
/// `maxConnections` open the oldest connection still sending its head makes
/// way for the new one. A request head that has arrived is answered at once.
///
/// Every request needs the token (`?token=` in its URL) and a `Host` that
/// names the address the connection arrived at, with its port (or
/// `localhost` on a loopback address), so a page of another site that a
/// DNS name has pointed at this address (DNS rebinding) gets 421. Without
/// the token, or with another, the answer is 403. Either way the handler is
/// not called.
public final class UIServer {
    public struct Request: Equatable {
        var method: String
        /// Without the query.
        var path: String
        var query: [String: String]
        /// The `Host` header's value, nil without one.
        var host: String?
    }

    public struct Response: Equatable {
        var status: Int
        var contentType: String
        var body: [UInt8]

        static func text(_ status: Int, _ text: String) -> Response {
            Response(status: status, contentType: "text/plain; charset=utf-8", body: Array((text + "\n").utf8))
        }
    }

    public static let maxConnections = 64
    static let maxRequestBytes = 16384
    /// From accept to the head's blank line.
    public static let headMilliseconds: UInt64 = 3_000
    /// From accept to the reply's last byte.
    static let lifetimeMilliseconds: UInt64 = 30_000

    let listener: ListeningSocket
    let token: String
    let maxConnections: Int
    private let handle: (Request) -> Response

    private struct Connection {
        var socket: StreamSocket
        /// The address the client connected to, for the `Host` check.
        var local: String
        var received: [UInt8] = []
        var reply: [UInt8] = []
        var sent = 0
        var answered = false
        var accepted: UInt64
    }

    private var connections: [Connection] = []
    private let clock = ContinuousClock()
    private let started: ContinuousClock.Instant

    public init(listener: ListeningSocket, token: String, maxConnections: Int = UIServer.maxConnections,
                handle: @escaping (Request) -> Response) {
        self.listener = listener
        self.token = token
        self.maxConnections = max(1, maxConnections)
        self.handle = handle
        started = clock.now
    }

    private var now: UInt64 {
        let elapsed = started.duration(to: clock.now).components
        return UInt64(max(0, elapsed.seconds)) * 1000 + UInt64(max(0, elapsed.attoseconds)) / 1_000_000_000_000_000
    }

    /// Serves until `stop()` says so (looked at every `tickMilliseconds` at least).
    public func serve(tickMilliseconds: Int32 = 200, until stop: () -> Bool) {
        while !stop() {
            var entries: [(FileDescriptor, Int16)] = [(listener.descriptor, Int16(POLLIN))]
            for connection in connections {
                entries.append((connection.socket.descriptor, Int16(connection.answered ? POLLOUT : POLLIN)))
            }
            guard let ready = try? Readiness.wait(entries, milliseconds: tickMilliseconds) else { continue }
            for index in connections.indices.reversed() where ready[index + 1] != 0 {
                step(index)
            }
            if ready[0] & Int16(POLLIN) != 0 { acceptWaiting() }
            let time = now
            for index in connections.indices.reversed() {
                let age = time - connections[index].accepted
                if age >= (connections[index].answered ? Self.lifetimeMilliseconds : Self.headMilliseconds) { drop(index) }
            }
        }
        for connection in connections { connection.socket.close() }
        connections.removeAll()
    }

    /// Accepts what waits (at most `maxConnections` a round), each read at
    /// once: a head already there is answered before anything can evict it.
    private func acceptWaiting() {
        for _ in 0..<maxConnections {
            guard let socket = try? listener.accept() else { return }
            guard let local = try? socket.localIPv4Address() else {
                socket.close()
                continue
            }
            if connections.count >= maxConnections {
                // The oldest still sending its head; with none (every slot a reply on its way), the newcomer.
                guard let oldest = connections.indices.filter({ !connections[$0].answered }).min(by: {
                    connections[$0].accepted < connections[$1].accepted
                }) else {
                    socket.close()
                    continue
                }
                drop(oldest)
            }
            connections.append(Connection(socket: socket, local: local, accepted: now))
            step(connections.count - 1)
        }
    }

    private func drop(_ index: Int) {
        connections[index].socket.close()
        connections.remove(at: index)
    }

    /// Reads more of a request, or writes more of its reply; closes the connection once done or broken.
    private func step(_ index: Int) {
        var connection = connections[index]
        do throws(Errno) {
            if !connection.answered {
                let room = Self.maxRequestBytes + 1 - connection.received.count
                let count = try connection.socket.receive(into: &connection.received, limit: room)
                if count == 0 { return drop(index) }
                if let response = respond(to: connection.received, arrivedAt: connection.local) {
                    connection.reply = Self.encode(response)
                    connection.answered = true
                }
            }
            if connection.answered {
                connection.sent += try connection.socket.send(connection.reply[connection.sent...])
                if connection.sent >= connection.reply.count { return drop(index) }
            }
            connections[index] = connection
        } catch {
            drop(index)
        }
    }

    /// The response once `received` holds a whole request (its head; a
    /// body is not read, the requests here carry their arguments in the
    /// URL), `nil` while it does not yet. `local` is the address the
    /// connection arrived at.
    func respond(to received: [UInt8], arrivedAt local: String) -> Response? {
        guard let end = Self.endOfHead(received) else {
            return received.count > Self.maxRequestBytes ? .text(431, "request too large") : nil
        }
        guard let request = Self.parse(Array(received[..<end])) else { return .text(400, "bad request") }
        guard let host = request.host, Self.names(host, local: local, port: listener.port) else {
            return .text(421, "misdirected request: Host must be the address this purgefs ui listens on, as in the URL it printed")
        }
        guard let given = request.query["token"], Self.same(given, token) else {
            return .text(403, "forbidden: this purgefs ui needs the token it printed at start (?token=...)")
        }
        return handle(request)
    }

    /// Whether a `Host` value names `local:port`: the address itself, or
    /// `localhost` when it is a loopback one; the port may be left out only when it is 80.
    static func names(_ host: String, local: String, port: UInt16) -> Bool {
        let value = host.lowercased()
        var names = [local]
        if IPv4Address.isLoopback(local) { names.append("localhost") }
        return names.contains { value == "\($0):\(port)" || (port == 80 && value == $0) }
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
        var host: String?
        for field in text.split(separator: "\r\n").dropFirst() {
            guard let colon = field.firstIndex(of: ":") else { return nil }
            guard field[..<colon].lowercased() == "host" else { continue }
            if host != nil { return nil }
            let value = field[field.index(after: colon)...].drop { $0 == " " || $0 == "\t" }
            host = String(value.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
        }
        return Request(method: String(words[0]), path: path, query: query, host: host)
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
                       421: "Misdirected Request",
                       431: "Request Header Fields Too Large", 500: "Internal Server Error"]
        let head = "HTTP/1.1 \(response.status) \(reasons[response.status] ?? "Status")\r\n"
            + "Content-Type: \(response.contentType)\r\nContent-Length: \(response.body.count)\r\n"
            + "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\n"
            + "Content-Security-Policy: default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; frame-ancestors 'none'\r\n"
            + "Connection: close\r\n\r\n"
        return Array(head.utf8) + response.body
    }
}
