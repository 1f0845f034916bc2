import Glibc

/// A unix datagram socket (`AF_UNIX`, `SOCK_DGRAM`): what the service
/// manager's notification socket is (`NOTIFY_SOCKET`, sd_notify(3)), and what
/// a test binds to stand in for it. The socket is close-on-exec.
///
/// An address is a path, or an abstract name written with a leading `@`
/// (the convention of `NOTIFY_SOCKET`): its first byte becomes NUL and the
/// address is exactly as long as the name, with no trailing NUL.
public struct DatagramSocket: Sendable {
    public let descriptor: FileDescriptor

    /// A new, unbound socket. Wraps `socket(2)`.
    public init() throws(Errno) {
        descriptor = FileDescriptor(rawValue: try checked { socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) })
    }

    /// A socket bound to `address` (a path, or `@name` for an abstract name). Wraps `bind(2)`.
    public static func bound(to address: String) throws(Errno) -> DatagramSocket {
        let socket = try DatagramSocket()
        do {
            try Self.withAddress(address) { (pointer, length) throws(Errno) in
                _ = try checked { bind(socket.descriptor.rawValue, pointer, length) }
            }
        } catch {
            socket.descriptor.closeQuietly()
            throw error
        }
        return socket
    }

    /// Sends `message` as one datagram to `address`, never waiting: a
    /// receiver whose queue is full gets `EAGAIN` instead. Wraps `sendto(2)`.
    public func send(_ message: String, to address: String) throws(Errno) {
        let bytes = Array(message.utf8)
        try Self.withAddress(address) { (pointer, length) throws(Errno) in
            let sent = try retryingInterrupts {
                bytes.withUnsafeBytes { buffer in
                    sendto(descriptor.rawValue, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT), pointer, length)
                }
            }
            if sent != bytes.count { throw Errno.messageTooLong }
        }
    }

    /// The next datagram, waiting at most `milliseconds` (`nil` when none came
    /// by then). Wraps `poll(2)` and `recv(2)`.
    public func receive(waitingAtMost milliseconds: Int32) throws(Errno) -> String? {
        var entry = pollfd(fd: descriptor.rawValue, events: Int16(POLLIN), revents: 0)
        let ready = try retryingInterrupts { Glibc.poll(&entry, 1, milliseconds) }
        guard ready > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = try retryingInterrupts {
            buffer.withUnsafeMutableBytes { recv(descriptor.rawValue, $0.baseAddress, $0.count, 0) }
        }
        return String(decoding: buffer.prefix(count), as: UTF8.self)
    }

    public func close() { descriptor.closeQuietly() }

    /// Calls `body` with `address` as a `sockaddr_un` and its length (`StreamSocket` too).
    /// `ENAMETOOLONG` for a name that does not fit, `EINVAL` for an empty one.
    static func withAddress(
        _ address: String, _ body: (UnsafePointer<sockaddr>, socklen_t) throws(Errno) -> Void
    ) throws(Errno) {
        var bytes = Array(address.utf8)
        guard !bytes.isEmpty, bytes != [UInt8(ascii: "@")] else { throw Errno.invalidArgument }
        let abstract = bytes[0] == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }
        var storage = sockaddr_un()
        storage.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: storage.sun_path)
        // A path needs room for its NUL; an abstract name is exactly its bytes.
        guard bytes.count + (abstract ? 0 : 1) <= capacity else { throw Errno.nameTooLong }
        withUnsafeMutableBytes(of: &storage.sun_path) { path in
            for (index, byte) in bytes.enumerated() { path[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (abstract ? 0 : 1))
        var failure: Errno?
        withUnsafePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                do throws(Errno) { try body(address, length) } catch { failure = error }
            }
        }
        if let failure { throw failure }
    }
}
