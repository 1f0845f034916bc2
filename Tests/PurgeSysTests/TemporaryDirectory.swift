import Glibc
import PurgeSys
import XCTest

/// A fresh directory under /tmp for one test, removed with everything in it.
final class TemporaryDirectory {
    let path: String
    let descriptor: FileDescriptor

    init() throws {
        var template = Array("/tmp/purgesys-test.XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else { throw Errno.current }
        path = String(cString: template)
        descriptor = try FileDescriptor.open(path: path, flags: O_RDONLY | O_DIRECTORY)
    }

    deinit {
        descriptor.closeQuietly()
        _ = system("rm -rf '\(path)'")
    }
}
