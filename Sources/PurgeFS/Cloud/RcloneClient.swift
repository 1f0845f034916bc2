import Glibc
import PurgeCore
import PurgeSys

/// purgefs's own HTTP client for rclone's remote control, over the Unix
/// socket of `RcloneDaemon` (PurgeSys's `StreamSocket`; Foundation's
/// URLSession has no Unix-socket transport, and PurgeFS does not use
/// Foundation). One connection per call, HTTP/1.0, so an answer is never
/// chunked: it ends with the connection, or after its Content-Length.
struct RcloneClient: Sendable {
    let socketPath: String
    let authorization: String

    /// How long a send or receive waits for rclone (which has timeouts of its own toward the remote).
    static let timeoutSeconds = 120

    /// Calls the remote-control command `command` (`operations/stat`...) with a JSON object.
    func call(_ command: String, _ body: String) throws(CloudFailure) -> JSONValue {
        let bytes = Array(body.utf8)
        let socket = try connect()
        defer { socket.close() }
        try sending { () throws(Errno) in
            try socket.send(HTTPMessage.requestHead("POST", "/" + command, headers: [
                ("Authorization", authorization), ("Content-Type", "application/json"), ("Content-Length", String(bytes.count)),
            ]))
            try Self.send(socket, bytes[...])
        }
        let (head, rest) = try readHead(socket)
        var answer = rest
        try receiving { () throws(Errno) in
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = try Self.receive(socket, into: &buffer)
                if count == 0 { break }
                answer += buffer[..<count]
                if answer.count > 1 << 28 { throw Errno.messageTooLong }
            }
        }
        guard let tree = JSONValue(parsing: answer) else {
            throw CloudFailure(.ioError, "rclone answered \(command) with HTTP \(head.status) and no JSON")
        }
        if let message = RcloneReply.error(in: tree) {
            throw CloudFailure(head.status == 404 ? .noEntry : .ioError, "rclone: \(message)")
        }
        guard head.status == 200 else { throw CloudFailure(.ioError, "rclone answered \(command) with HTTP \(head.status)") }
        return tree
    }

    /// Uploads `size` bytes of `local` to `remote` (a directory) on `fs` as `name`,
    /// streamed as `multipart/form-data` (`operations/uploadfile`).
    func upload(_ local: FileDescriptor, size: UInt64, fs: String, directory: String, name: String) throws(CloudFailure) {
        let boundary = "purgefs-" + String(UInt64.random(in: .min ... .max), radix: 16)
        let opening = "--\(boundary)\r\nContent-Disposition: form-data; name=\"file0\"; filename=\"\(name)\"\r\n"
            + "Content-Type: application/octet-stream\r\n\r\n"
        let closing = "\r\n--\(boundary)--\r\n"
        let length = UInt64(opening.utf8.count) + size + UInt64(closing.utf8.count)
        let target = "/operations/uploadfile?fs=" + HTTPMessage.percentEncoded(fs, keepingSlashes: false)
            + "&remote=" + HTTPMessage.percentEncoded(directory, keepingSlashes: false)
        let socket = try connect()
        defer { socket.close() }
        var sourceFailure: Errno?
        try sending { () throws(Errno) in
            try socket.send(HTTPMessage.requestHead("POST", target, headers: [
                ("Authorization", authorization), ("Content-Type", "multipart/form-data; boundary=" + boundary),
                ("Content-Length", String(length)),
            ]))
            try socket.send(opening)
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            var offset: UInt64 = 0
            while offset < size {
                let count: Int
                do throws(Errno) {
                    let wanted = Int(min(UInt64(buffer.count), size - offset))
                    count = try buffer.withUnsafeMutableBytes { raw in
                        Result { () throws(Errno) -> Int in
                            try local.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[..<wanted]), at: Int64(offset))
                        }
                    }.get()
                } catch {
                    sourceFailure = error
                    return  // the request stays short: rclone sees a broken upload and stores nothing
                }
                if count == 0 {
                    sourceFailure = .ioError  // the file ended early: not a whole copy
                    return
                }
                try Self.send(socket, buffer[..<count])
                offset += UInt64(count)
            }
            try socket.send(closing)
        }
        if let sourceFailure { throw CloudFailure(sourceFailure, "reading the local file: \(sourceFailure)") }
        let (head, rest) = try readHead(socket)
        var answer = rest
        try receiving { () throws(Errno) in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = try Self.receive(socket, into: &buffer)
                if count == 0 { break }
                answer += buffer[..<count]
                if answer.count > 1 << 20 { throw Errno.messageTooLong }
            }
        }
        if let tree = JSONValue(parsing: answer), let message = RcloneReply.error(in: tree) {
            throw CloudFailure(.ioError, "rclone: \(message)")
        }
        guard head.status == 200 else { throw CloudFailure(.ioError, "rclone answered the upload with HTTP \(head.status)") }
    }

    /// Reads `remote` on `fs` (rclone's `--rc-serve`) into `file` from offset 0:
    /// exactly `size` bytes, or an error.
    func download(fs: String, remote: String, size: UInt64, into file: FileDescriptor) throws(CloudFailure) {
        let target = "/" + HTTPMessage.percentEncoded("[" + fs + "]", keepingSlashes: false) + "/" + HTTPMessage.percentEncoded(remote)
        let socket = try connect()
        defer { socket.close() }
        try sending { () throws(Errno) in
            try socket.send(HTTPMessage.requestHead("GET", target, headers: [("Authorization", authorization)]))
        }
        let (head, rest) = try readHead(socket)
        guard head.status == 200 else {
            throw CloudFailure(head.status == 404 ? .noEntry : .ioError, "rclone answered the download with HTTP \(head.status)")
        }
        guard head.contentLength == size else {
            throw CloudFailure(.ioError, "the remote copy changed: \(head.contentLength.map(String.init) ?? "no") bytes, not \(size)")
        }
        var offset: UInt64 = 0
        func write(_ bytes: ArraySlice<UInt8>) throws(CloudFailure) {
            guard offset + UInt64(bytes.count) <= size else { throw CloudFailure(.ioError, "the remote sent more than \(size) bytes") }
            var written = 0
            while written < bytes.count {
                do throws(Errno) {
                    let done = written
                    written += try bytes.withUnsafeBytes { raw in
                        Result { () throws(Errno) -> Int in
                            try file.write(UnsafeRawBufferPointer(rebasing: raw[done...]), at: Int64(offset) + Int64(done))
                        }
                    }.get()
                } catch {
                    throw CloudFailure(error, "writing the local file: \(error)")
                }
            }
            offset += UInt64(bytes.count)
        }
        try write(rest[...])
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while offset < size {
            var count = 0
            try receiving { () throws(Errno) in count = try Self.receive(socket, into: &buffer) }
            if count == 0 { break }
            try write(buffer[..<count])
        }
        guard offset == size else { throw CloudFailure(.ioError, "the download was cut off after \(offset) of \(size) bytes") }
    }

    // MARK: Plumbing

    private static func send(_ socket: StreamSocket, _ bytes: ArraySlice<UInt8>) throws(Errno) {
        try bytes.withUnsafeBytes { raw in Result { () throws(Errno) in try socket.send(raw) } }.get()
    }

    private static func receive(_ socket: StreamSocket, into buffer: inout [UInt8]) throws(Errno) -> Int {
        try buffer.withUnsafeMutableBytes { raw in Result { () throws(Errno) -> Int in try socket.receive(into: raw) } }.get()
    }

    private func connect() throws(CloudFailure) -> StreamSocket {
        do throws(Errno) {
            return try StreamSocket.connect(to: socketPath, timeoutSeconds: Self.timeoutSeconds)
        } catch {
            throw CloudFailure(.notConnected, "rclone's remote control does not answer (\(error)); is rclone rcd still running?")
        }
    }

    private func sending(_ body: () throws(Errno) -> Void) throws(CloudFailure) {
        do throws(Errno) { try body() } catch {
            throw CloudFailure(.ioError, "sending to rclone: \(error)")
        }
    }

    private func receiving(_ body: () throws(Errno) -> Void) throws(CloudFailure) {
        do throws(Errno) { try body() } catch {
            throw CloudFailure(error == .tryAgain ? .timedOut : .ioError,
                               error == .tryAgain ? "rclone did not answer within \(Self.timeoutSeconds) s" : "reading rclone's answer: \(error)")
        }
    }

    /// The response head, and the body bytes that came with it.
    private func readHead(_ socket: StreamSocket) throws(CloudFailure) -> (HTTPMessage.ResponseHead, [UInt8]) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            var count = 0
            try receiving { () throws(Errno) in count = try Self.receive(socket, into: &buffer) }
            if count == 0 { throw CloudFailure(.ioError, "rclone closed the connection without an answer") }
            received += buffer[..<count]
            if let end = HTTPMessage.headEnd(in: received) {
                guard let head = HTTPMessage.responseHead(received[..<end]) else {
                    throw CloudFailure(.ioError, "rclone's answer is not HTTP")
                }
                return (head, Array(received[end...]))
            }
            if received.count > 65536 { throw CloudFailure(.ioError, "rclone's answer has no end of its head") }
        }
    }
}
