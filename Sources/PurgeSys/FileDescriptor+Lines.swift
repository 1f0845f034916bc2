import Glibc

extension FileDescriptor {
    /// Reads from the descriptor's offset to end of file, 64 KiB at a time,
    /// and hands over each line without its newline; a last line without
    /// one is handed over too. A file of any size in bounded memory (but
    /// one line's). Wraps `read(2)`.
    public func forEachLine(_ body: ([UInt8]) -> Void) throws(Errno) {
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 1)
        defer { chunk.deallocate() }
        var pending: [UInt8] = []
        while true {
            let count = try read(into: chunk)
            if count == 0 { break }
            var start = 0
            for index in 0..<count where chunk[index] == UInt8(ascii: "\n") {
                pending += chunk[start..<index]
                body(pending)
                pending.removeAll(keepingCapacity: true)
                start = index + 1
            }
            pending += chunk[start..<count]
        }
        if !pending.isEmpty { body(pending) }
    }
}
