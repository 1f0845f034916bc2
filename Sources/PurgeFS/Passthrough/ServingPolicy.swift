import Glibc

/// What a feature says about how the kernel may serve a file and what it
/// shows of it: whether its reads and flushes must reach the daemon (no
/// `keep_cache`, no `noflush`), whether the kernel may read it straight
/// from its backing file (kernel passthrough), and how its attributes are
/// shown. The mount registers the features that care (fault rules, crash
/// recording, the cloud tier: `ServingPolicies`), so `open` and `getattr`
/// name none of them. Each answer is a plain question: no wait, no lock
/// held across I/O.
protocol ServingPolicy: Sendable {
    /// Whether a read of `inode` could be failed or changed here (a fault
    /// rule): its cached pages are dropped at open and not kept.
    func mustSeeReads(of inode: Inode) -> Bool
    /// Whether a read-only close of `inode` must send its flush (a flush rule could match it).
    func mustSeeFlush(of inode: Inode) -> Bool
    /// Whether the kernel must not read `inode` from its backing file
    /// behind the daemon's back (decided at open).
    func refusesPassthrough(_ inode: Inode) -> Bool
    /// `status` as the mount shows it, given what this feature keeps in the backing store.
    func presented(_ status: stat) -> stat
}

extension ServingPolicy {
    func mustSeeReads(of inode: Inode) -> Bool { false }
    func mustSeeFlush(of inode: Inode) -> Bool { false }
    func refusesPassthrough(_ inode: Inode) -> Bool { false }
    func presented(_ status: stat) -> stat { status }
}

/// The serving policies registered at mount, asked in registration order:
/// a question is answered yes when any says yes; `presented` passes the
/// status through each in turn.
struct ServingPolicies: Sendable {
    let all: [any ServingPolicy]

    init(_ all: [any ServingPolicy]) {
        self.all = all
    }

    func mustSeeReads(of inode: Inode) -> Bool { all.contains { $0.mustSeeReads(of: inode) } }
    func mustSeeFlush(of inode: Inode) -> Bool { all.contains { $0.mustSeeFlush(of: inode) } }
    func refusesPassthrough(_ inode: Inode) -> Bool { all.contains { $0.refusesPassthrough(inode) } }
    func presented(_ status: stat) -> stat { all.reduce(status) { $1.presented($0) } }
}
