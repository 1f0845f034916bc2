import Glibc

/// A listening TCP socket on an IPv4 address (`AF_INET`, `SOCK_STREAM`),
/// non-blocking and close-on-exec: what `purgefs ui` serves its page on.
/// Connections it accepts are non-blocking too; `StreamSocket` reads and
/// writes them without ever waiting, and `Readiness.wait` is the one place
/// that waits.
public struct ListeningSocket: Sendable {
    public let descriptor: FileDescriptor
    /// The port it is bound to (the kernel's choice when 0 was asked for).
    public let port: UInt16

    /// Binds `host` (a dotted IPv4 address) and `port` (0: any free one)
    /// and listens. `EINVAL` for a host that is not such an address. Wraps
    /// `socket(2)`, `setsockopt(2)` (`SO_REUSEADDR`), `bind(2)`, `listen(2)`, `getsockname(2)`.
    public static func listen(host: String, port: UInt16, backlog: Int32 = 128) throws(Errno) -> ListeningSocket {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard host.withCString({ inet_pton(AF_INET, $0, &address.sin_addr) }) == 1 else { throw Errno.invalidArgument }
        let raw = try checked {
            socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        }
        let descriptor = FileDescriptor(rawValue: raw)
        do throws(Errno) {
            var one: Int32 = 1
            _ = try checked { setsockopt(raw, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size)) }
            _ = try checked {
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(raw, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                }
            }
            _ = try checked { Glibc.listen(raw, backlog) }
            var bound = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = try checked {
                withUnsafeMutablePointer(to: &bound) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(raw, $0, &length) }
                }
            }
            return ListeningSocket(descriptor: descriptor, port: UInt16(bigEndian: bound.sin_port))
        } catch {
            descriptor.closeQuietly()
            throw error
        }
    }

    /// The next waiting connection (non-blocking, close-on-exec), or `nil`
    /// when none is waiting. Wraps `accept(2)` and `fcntl(2)` (Glibc's
    /// module has no `accept4`; the process that serves is one thread).
    public func accept() throws(Errno) -> StreamSocket? {
        while true {
            let raw = Glibc.accept(descriptor.rawValue, nil, nil)
            if raw >= 0 {
                let connection = FileDescriptor(rawValue: raw)
                do throws(Errno) {
                    try connection.setCloseOnExec()
                    let flags = try checked { fcntl(raw, F_GETFL) }
                    _ = try checked { fcntl(raw, F_SETFL, flags | O_NONBLOCK) }
                } catch {
                    connection.closeQuietly()
                    throw error
                }
                return StreamSocket(descriptor: connection)
            }
            let error = Errno.current
            switch error {
            case .interrupted: continue
            case .tryAgain: return nil
            // A connection that went before it was accepted: look again later.
            case Errno(ECONNABORTED), Errno(EPROTO): return nil
            default: throw error
            }
        }
    }

    public func close() { descriptor.closeQuietly() }
}

/// One accepted, non-blocking TCP connection.
public struct StreamSocket: Sendable, Hashable {
    public let descriptor: FileDescriptor

    /// Appends what has arrived to `buffer`, at most `limit` bytes: the
    /// count, 0 at the end of the stream, `nil` when nothing is there yet. Wraps `recv(2)`.
    public func receive(into buffer: inout [UInt8], limit: Int) throws(Errno) -> Int? {
        var chunk = [UInt8](repeating: 0, count: max(1, min(limit, 16384)))
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(descriptor.rawValue, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count >= 0 {
                buffer += chunk.prefix(count)
                return count
            }
            let error = Errno.current
            if error == .interrupted { continue }
            if error == .tryAgain { return nil }
            throw error
        }
    }

    /// Sends what the socket takes now of `bytes`: the count sent, 0 when it takes nothing yet. Wraps `send(2)`.
    public func send(_ bytes: ArraySlice<UInt8>) throws(Errno) -> Int {
        guard !bytes.isEmpty else { return 0 }
        while true {
            let count = bytes.withUnsafeBytes { Glibc.send(descriptor.rawValue, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL)) }
            if count >= 0 { return count }
            let error = Errno.current
            if error == .interrupted { continue }
            if error == .tryAgain { return 0 }
            throw error
        }
    }

    /// The dotted IPv4 address this connection arrived at (for a listener
    /// on `0.0.0.0`, the one of the machine's addresses the client named).
    /// Wraps `getsockname(2)` and `inet_ntop(3)`.
    public func localIPv4Address() throws(Errno) -> String {
        var local = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = try checked {
            withUnsafeMutablePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor.rawValue, $0, &length) }
            }
        }
        guard local.sin_family == sa_family_t(AF_INET) else { throw Errno.invalidArgument }
        return IPv4Address.dotted(local.sin_addr)
    }

    public func close() { descriptor.closeQuietly() }
}

/// IPv4 addresses as text, and the machine's own.
public enum IPv4Address {
    /// `a.b.c.d`. Wraps `inet_ntop(3)`.
    public static func dotted(_ address: in_addr) -> String {
        var address = address
        var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        guard inet_ntop(AF_INET, &address, &text, socklen_t(text.count)) != nil else { return "0.0.0.0" }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The IPv4 addresses of the machine's interfaces that are up, loopback
    /// last, each once. Wraps `getifaddrs(3)`.
    public static func ofInterfaces() throws(Errno) -> [String] {
        var list: UnsafeMutablePointer<ifaddrs>?
        _ = try checked { getifaddrs(&list) }
        defer { freeifaddrs(list) }
        var found: [String] = [], loopback: [String] = []
        var entry = list
        while let current = entry {
            defer { entry = current.pointee.ifa_next }
            guard current.pointee.ifa_flags & UInt32(IFF_UP) != 0, let address = current.pointee.ifa_addr,
                  address.pointee.sa_family == sa_family_t(AF_INET) else { continue }
            let text = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { dotted($0.pointee.sin_addr) }
            if current.pointee.ifa_flags & UInt32(IFF_LOOPBACK) != 0 {
                if !loopback.contains(text) { loopback.append(text) }
            } else if !found.contains(text) {
                found.append(text)
            }
        }
        return found + loopback
    }

    /// Whether `address` is in 127.0.0.0/8.
    public static func isLoopback(_ address: String) -> Bool { address.hasPrefix("127.") }
}

/// Waiting for descriptors to be ready.
public enum Readiness {
    /// What each of `entries` (a descriptor and the `poll` events asked
    /// for: `POLLIN`, `POLLOUT`) is ready for, waiting at most
    /// `milliseconds`; all 0 when the time ran out or a signal came. Wraps `poll(2)`.
    public static func wait(_ entries: [(FileDescriptor, Int16)], milliseconds: Int32) throws(Errno) -> [Int16] {
        var table = entries.map { pollfd(fd: $0.0.rawValue, events: $0.1, revents: 0) }
        let ready = table.withUnsafeMutableBufferPointer { poll($0.baseAddress, nfds_t($0.count), milliseconds) }
        if ready < 0 {
            let error = Errno.current
            if error == .interrupted { return entries.map { _ in 0 } }
            throw error
        }
        return table.map(\.revents)
    }
}

/// Random bytes from the kernel, for secrets (`purgefs ui`'s token). Reads `/dev/urandom`.
public enum RandomBytes {
    public static func read(_ count: Int) throws(Errno) -> [UInt8] {
        let file = try FileDescriptor.open(path: "/dev/urandom", flags: O_RDONLY | O_CLOEXEC)
        defer { file.closeQuietly() }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: count)
        while bytes.count < count {
            let got = try retryingInterrupts { chunk.withUnsafeMutableBytes { Glibc.read(file.rawValue, $0.baseAddress, count - bytes.count) } }
            guard got > 0 else { throw Errno.ioError }
            bytes += chunk.prefix(got)
        }
        return bytes
    }
}
