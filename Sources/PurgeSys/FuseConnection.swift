import Dispatch
import Glibc
import Synchronization

/// A FUSE connection as the kernel's control filesystem (fusectl) shows it:
/// `/sys/fs/fuse/connections/N`, where N is the minor part of the mount's
/// device number. Aborting it fails every request waiting on the daemon, so
/// no process stays stuck on a dead or hung daemon, and a daemon thread
/// waiting in the kernel on such a request is let go.
public struct FuseConnection: Sendable {
    public let number: Int
    static let controlRoot = "/sys/fs/fuse/connections"

    public init(number: Int) { self.number = number }

    var directory: String { "\(Self.controlRoot)/\(number)" }

    /// Aborts the connection (writes `1` to its `abort`), mounting fusectl
    /// first when needed. Needs root.
    public func abort() throws(Errno) {
        Self.mountControlFilesystem()
        let control = try FileDescriptor.open(path: directory + "/abort", flags: O_WRONLY | O_CLOEXEC)
        defer { control.closeQuietly() }
        try control.writeAll("1\n")
    }

    /// fusectl is mounted on most systems; where it is not, root can mount it.
    static func mountControlFilesystem() {
        guard access(controlRoot + "/.", F_OK) == 0 else { return }
        var root = stat(), parent = stat()
        guard stat(controlRoot, &root) == 0, stat(controlRoot + "/..", &parent) == 0, root.st_dev == parent.st_dev else { return }
        _ = Glibc.mount("fusectl", controlRoot, "fusectl", 0, nil)
    }
}

extension FuseConnection {
    /// Whether the daemon serving the mount at `mountpoint` answers a
    /// `statfs` within `milliseconds`. The probe runs on a thread of its own:
    /// on a hung daemon it stays blocked until the connection is aborted.
    /// Wraps `statvfs(3)`.
    public static func daemonAnswers(at mountpoint: String, within milliseconds: Int) -> Bool {
        let answered = DispatchSemaphore(value: 0)
        let result = Atomic<Int32>(-1)
        DispatchQueue.global().async {
            var status = statvfs()
            result.store(statvfs(mountpoint, &status) == 0 ? 0 : errno, ordering: .relaxed)
            answered.signal()
        }
        guard answered.wait(timeout: .now() + .milliseconds(milliseconds)) == .success else { return false }
        // A dead daemon's mount answers at once, with ENOTCONN.
        return result.load(ordering: .relaxed) != ENOTCONN
    }
}
