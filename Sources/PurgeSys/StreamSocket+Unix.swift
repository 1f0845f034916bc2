import Glibc

/// A connected unix stream socket (`AF_UNIX`, `SOCK_STREAM`), close-on-exec:
/// how the cloud tier talks HTTP to the rclone daemon it started. Sends never
/// raise `SIGPIPE` (a peer that went away is `EPIPE`), and every send and
/// receive waits at most the timeout given at connect (then `EAGAIN`).
extension StreamSocket {

    /// Connects to the socket at `path` (or `@name`, abstract). Wraps
    /// `socket(2)`, `setsockopt(2)` (`SO_RCVTIMEO`, `SO_SNDTIMEO`) and `connect(2)`.
    public static func connect(to path: String, timeoutSeconds: Int) throws(Errno) -> StreamSocket {
        let descriptor = FileDescriptor(rawValue: try checked {
            socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        })
        do {
            var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
            for option in [SO_RCVTIMEO, SO_SNDTIMEO] {
                _ = try checked { setsockopt(descriptor.rawValue, SOL_SOCKET, option, &timeout, socklen_t(MemoryLayout<timeval>.size)) }
            }
            try DatagramSocket.withAddress(path) { (pointer, length) throws(Errno) in
                _ = try retryingInterrupts { Glibc.connect(descriptor.rawValue, pointer, length) }
            }
        } catch {
            descriptor.closeQuietly()
            throw error
        }
        return StreamSocket(descriptor: descriptor)
    }

    /// Sends all of `buffer`. Wraps `send(2)` with `MSG_NOSIGNAL`.
    public func send(_ buffer: UnsafeRawBufferPointer) throws(Errno) {
        var offset = 0
        while offset < buffer.count {
            let sent = try retryingInterrupts {
                Glibc.send(descriptor.rawValue, buffer.baseAddress! + offset, buffer.count - offset, Int32(MSG_NOSIGNAL))
            }
            offset += sent
        }
    }

    public func send(_ text: String) throws(Errno) {
        let bytes = Array(text.utf8)
        try bytes.withUnsafeBytes { raw in Result { () throws(Errno) in try send(raw) } }.get()
    }

    /// Receives what has arrived, at most `buffer.count` bytes; 0 at the end
    /// of the stream. Wraps `recv(2)`.
    public func receive(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        try retryingInterrupts { recv(descriptor.rawValue, buffer.baseAddress, buffer.count, 0) }
    }
}
