import CFuse
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
        try CurrentThread.setSupplementaryGroups(supplementaryGroups())
        do throws(Errno) {
            try CurrentThread.setFileSystemGroup(group)
            try CurrentThread.setFileSystemUser(user)
        } catch {
            Self.restore(daemon, user: false)
            throw error
        }
        defer { Self.restore(daemon, user: true) }
        return try body()
    }

    /// Back to the daemon's own identity (its user too when `user`). The
    /// daemon may always take its own ids back; a thread that could not
    /// would serve later requests as someone else, so that is a bug that traps.
    private static func restore(_ daemon: DaemonIdentity, user: Bool) {
        do throws(Errno) {
            if user { try CurrentThread.setFileSystemUser(daemon.user) }
        } catch {
            preconditionFailure("purgefs: cannot restore the daemon's fsuid")
        }
        do throws(Errno) {
            try CurrentThread.setFileSystemGroup(daemon.group)
        } catch {
            preconditionFailure("purgefs: cannot restore the daemon's fsgid")
        }
        do throws(Errno) {
            try CurrentThread.setSupplementaryGroups(daemon.groups)
        } catch {
            preconditionFailure("purgefs: cannot restore the daemon's groups: \(error)")
        }
    }

    /// Whether `group` is the caller's group or one of its supplementary groups.
    func isMember(of group: gid_t) -> Bool {
        group == self.group || supplementaryGroups().contains(group)
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

    static let shared = DaemonIdentity(
        user: CurrentProcess.effectiveUserID, group: CurrentProcess.effectiveGroupID,
        groups: (try? CurrentProcess.supplementaryGroups()) ?? [])
}
