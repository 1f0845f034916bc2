import CFuse
import CLinux
import Glibc
import PurgeSys

/// Who made a request: objects it creates must belong to it, not to the daemon.
///
/// The daemon runs as root; for operations that create inodes it takes on the
/// caller's file-system uid, gid and supplementary groups on the serving
/// thread only (setfsuid, setfsgid and a raw setgroups syscall, all
/// per-thread), so the backing filesystem assigns ownership (setgid
/// directories included) and checks permissions exactly as it would for the
/// caller. Other operations run as root: with `default_permissions` the kernel
/// has checked them already.
struct CallerIdentity {
    let user: uid_t
    let group: gid_t
    let request: fuse_req_t

    init(_ request: fuse_req_t) {
        let context = fuse_req_ctx(request)!.pointee
        self.user = context.uid
        self.group = context.gid
        self.request = request
    }

    /// Runs `body` with the caller's file-system identity.
    func perform<T>(_ body: () throws(Errno) -> T) throws(Errno) -> T {
        let daemon = DaemonIdentity.shared
        guard daemon.canImpersonate, user != daemon.user || group != daemon.group else {
            return try body()
        }
        var groups = supplementaryGroups()
        _ = clinux_thread_setgroups(groups.count, &groups)
        _ = clinux_setfsgid(group)
        _ = clinux_setfsuid(user)
        defer {
            _ = clinux_setfsuid(daemon.user)
            _ = clinux_setfsgid(daemon.group)
            _ = clinux_thread_setgroups(daemon.groups.count, daemon.groups)
        }
        return try body()
    }

    /// The caller's supplementary groups, as the kernel reports them in /proc.
    private func supplementaryGroups() -> [gid_t] {
        var capacity = 32
        while true {
            var list = [gid_t](repeating: 0, count: capacity)
            let count = Int(fuse_req_getgroups(request, Int32(capacity), &list))
            if count < 0 { return [group] }  // the caller is gone; its primary group is all we know
            if count <= capacity { return Array(list.prefix(count)) }
            capacity = count
        }
    }
}

/// The daemon's own identity, read once, restored after each impersonation.
struct DaemonIdentity: Sendable {
    let user: uid_t
    let group: gid_t
    let groups: [gid_t]
    /// Only root can take on another identity.
    var canImpersonate: Bool { user == 0 }

    static let shared: DaemonIdentity = {
        let count = Int(getgroups(0, nil))
        var groups = [gid_t](repeating: 0, count: max(count, 0))
        let read = getgroups(Int32(groups.count), &groups)
        return DaemonIdentity(user: geteuid(), group: getegid(), groups: Array(groups.prefix(Int(max(read, 0)))))
    }()
}
