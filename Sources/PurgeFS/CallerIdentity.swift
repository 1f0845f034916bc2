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

    /// Runs `body` with the caller's file-system identity. A switch that
    /// fails (the daemon lacks `CAP_SETUID` or `CAP_SETGID`) fails the
    /// request with its errno (`EPERM` for setfsuid and setfsgid, which
    /// report no errno) after undoing what was switched: `body` never runs
    /// as the daemon in the caller's place.
    func perform<T>(_ body: () throws(Errno) -> T) throws(Errno) -> T {
        let daemon = DaemonIdentity.shared
        guard daemon.canImpersonate, user != daemon.user || group != daemon.group else {
            return try body()
        }
        var groups = supplementaryGroups()
        if clinux_thread_setgroups(groups.count, &groups) != 0 { throw Errno(errno) }
        guard Self.switchFileSystemGroup(to: group) else {
            Self.restore(daemon, user: false)
            throw Errno.notPermitted
        }
        guard Self.switchFileSystemUser(to: user) else {
            Self.restore(daemon, user: false)
            throw Errno.notPermitted
        }
        defer { Self.restore(daemon, user: true) }
        return try body()
    }

    /// setfsuid(2) returns the previous id whether or not it changed it; a
    /// second call with an id that is never valid changes nothing and says
    /// what the id is now.
    private static func switchFileSystemUser(to user: uid_t) -> Bool {
        _ = clinux_setfsuid(user)
        return uid_t(bitPattern: clinux_setfsuid(uid_t.max)) == user
    }

    private static func switchFileSystemGroup(to group: gid_t) -> Bool {
        _ = clinux_setfsgid(group)
        return gid_t(bitPattern: clinux_setfsgid(gid_t.max)) == group
    }

    /// Back to the daemon's own identity (its user too when `user`). The
    /// daemon may always take its own ids back; a thread that could not
    /// would serve later requests as someone else, so that is a bug that traps.
    private static func restore(_ daemon: DaemonIdentity, user: Bool) {
        if user { precondition(switchFileSystemUser(to: daemon.user), "purgefs: cannot restore the daemon's fsuid") }
        precondition(switchFileSystemGroup(to: daemon.group), "purgefs: cannot restore the daemon's fsgid")
        precondition(clinux_thread_setgroups(daemon.groups.count, daemon.groups) == 0,
                     "purgefs: cannot restore the daemon's groups: \(Errno(errno))")
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
