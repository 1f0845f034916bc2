import PurgeSys
import Synchronization

/// An open directory of the mount. The kernel may use one handle from
/// several threads (readdir and fsyncdir), so the stream is used only under
/// `lock`.
final class DirectoryHandle: Sendable {
    let directory: Inode
    private let lock = Mutex(())
    nonisolated(unsafe) private let stream: DirectoryStream

    init(_ directory: Inode) throws(Errno) {
        self.directory = directory
        self.stream = try directory.withDescriptor { (descriptor) throws(Errno) in try DirectoryStream(descriptor) }
    }

    /// Runs `body` with exclusive use of the stream.
    func withStream<T>(_ body: (DirectoryStream) throws(Errno) -> T) throws(Errno) -> T {
        try lock.withLock { (_) throws(Errno) -> T in try body(stream) }
    }
}
