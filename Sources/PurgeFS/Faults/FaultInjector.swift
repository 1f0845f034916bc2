import CFuse
import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// Fault rules at work: every request is checked once, at its start
/// (`FaultAdmission`, a request interceptor), before its handler takes any lock; a rule that
/// fires fails it, delays it, or shortens its write.
///
/// Without rules the check is one relaxed atomic load (`isArmed`): nothing
/// else is read, no lock taken, no path resolved. With rules, a request whose
/// operation no rule names costs a lock of the book and no more; only one
/// that a rule could match has its path (the `/proc/self/fd` link of its
/// node) and, if a rule names one, its caller's command read.
///
/// A delay sleeps on the request's own worker thread holding nothing, in
/// slices, and ends early when the caller is interrupted or the session
/// ends. libfuse starts workers on demand up to
/// `FileSystemServer.maximumWorkerThreads`; at most half of them may sleep in
/// delays at once, and a call beyond that is let through undelayed (and
/// logged so), so a delay never leaves the mount without a thread to answer.
/// Over FUSE over io_uring the same holds per CPU (`KernelWire.mayWait`):
/// the kernel gives a CPU's requests to its own ring threads only.
final class FaultInjector: Sendable {
    private let armed = Atomic<Bool>(false)
    private let book = Mutex<FaultBook>(FaultBook())
    private let log: FaultLog
    /// The container's path as the kernel shows the root's descriptor.
    private let containerPath: String
    private let delayed = Atomic<Int>(0)
    /// The libfuse session, as bits, once serving: a delay ends when it has exited.
    private let session = Atomic<UInt>(0)

    static let maximumDelayed = Int(FileSystemServer.maximumWorkerThreads) / 2

    init(root: FileDescriptor, log: FaultLog) {
        self.containerPath = root.currentPath() ?? "/"
        self.log = log
    }

    /// Whether any rule is set: the whole cost of the check without rules.
    @inline(__always)
    var isArmed: Bool { armed.load(ordering: .relaxed) }

    // MARK: Rules

    /// Adds `rule` (a random seed if it has none); returns its ID.
    @discardableResult
    func add(_ rule: FaultRule) -> Int {
        book.withLock { book in
            let id = book.add(rule, seed: UInt64.random(in: 0...UInt64.max))
            armed.store(true, ordering: .releasing)
            return id
        }
    }

    /// Removes rule `id`, or all when nil; false when there is no rule `id`.
    func clear(_ id: Int?) -> Bool {
        book.withLock { book in
            let cleared = book.clear(id)
            armed.store(!book.isEmpty, ordering: .releasing)
            return cleared
        }
    }

    /// `FaultBook.listing`: the root's `user.purgefs.faults`.
    var listing: String {
        book.withLock { $0.listing }
    }

    /// Lets delays see the session end.
    func attach(session pointer: OpaquePointer) {
        session.store(UInt(bitPattern: pointer), ordering: .releasing)
    }

    // MARK: The check

    /// What a request may do after the rules have seen it.
    enum Admission {
        case proceed
        /// Fail it with this errno (logged already).
        case fail(Errno)
        /// Write only part of its data, then `noteShortWrite`.
        case shortWrite(FaultFiring, FaultCall)
    }

    /// The slow path of the check (`isArmed` was true): counts the call
    /// against the rules, logs a firing and carries out a delay.
    func admit(_ request: fuse_req_t?, _ operations: FaultCallOperations, path: () -> String) -> Admission {
        let pid = fuse_req_ctx(request).pointee.pid
        guard let interest = book.withLock({ $0.interest(in: operations, pid: pid) }) else { return .proceed }
        var call = FaultCall(operations: operations, path: path(), pid: pid)
        if interest.command { call.command = ProcessesInside.command(of: pid) }
        guard let firing = decide(call) else { return .proceed }
        switch firing.action {
        case .fail(let name):
            // FaultAction.errnoNames are all known to Errno(named:); PurgeFSTests checks it.
            let errno = Errno(named: name) ?? .ioError
            record(firing, call, result: name)
            return .fail(errno)
        case .delay(let nanoseconds):
            record(firing, call, result: delay(nanoseconds, request))
            return .proceed
        case .shortWrite:
            return .shortWrite(firing, call)
        case .offline:  // refused for requests of the mount when the rule is made
            return .proceed
        }
    }

    /// What a call of the cloud tier to its remote may do (`CloudLink`).
    enum CloudAdmission: Equatable {
        case proceed
        case fail(Errno)
        case offline
    }

    /// The check for a call of the cloud tier (`upload`, `download`,
    /// `remote-delete`, `remote-list`) on the document `path`: counted like
    /// a request's, with no calling process (pid 0). A delay sleeps on the
    /// tier's own thread (or the download's), never a FUSE worker's, and
    /// ends early when the session ends.
    func admitCloud(_ operation: FaultOperation, path: String) -> CloudAdmission {
        guard isArmed else { return .proceed }
        let operations = FaultCallOperations(operation)
        guard book.withLock({ $0.interest(in: operations, pid: 0) }) != nil else { return .proceed }
        let call = FaultCall(operations: operations, path: path, pid: 0)
        guard let firing = decide(call) else { return .proceed }
        switch firing.action {
        case .fail(let name):
            record(firing, call, result: name)
            return .fail(Errno(named: name) ?? .ioError)
        case .offline:
            record(firing, call, result: "offline")
            return .offline
        case .delay(let nanoseconds):
            let deadline = WallClock.nanoseconds() &+ nanoseconds
            var result = "delayed" + FaultAction.delay(nanoseconds: nanoseconds).summary.dropFirst("delay".count)
            while true {
                let now = WallClock.nanoseconds()
                if now >= deadline { break }
                let bits = session.load(ordering: .acquiring)
                if bits != 0, fuse_session_exited(OpaquePointer(bitPattern: bits)) != 0 {
                    result = "delay cut short: unmounting"
                    break
                }
                let slice = min(deadline - now, 50_000_000)
                CurrentProcess.sleep(nanoseconds: slice)
            }
            record(firing, call, result: result)
            return .proceed
        case .shortWrite:  // refused for cloud operations when the rule is made
            return .proceed
        }
    }

    /// Counts `call` against the rules: the paths are matched on a copy of
    /// the book, outside its lock, so `clear` never waits for a match; the
    /// lock is held only to count.
    private func decide(_ call: FaultCall) -> FaultFiring? {
        let matching = book.withLock { $0 }.matching(call)
        guard !matching.isEmpty else { return nil }
        return book.withLock { $0.decide(call, matching: matching) }
    }

    /// Whether a read rule could match `inode`'s reads: then the kernel must
    /// not serve them from its page cache (`ContainerFileSystem.describe`).
    /// The path is matched on a copy of the book, outside its lock.
    func mayFailReads(of inode: Inode) -> Bool { mayFail(.read, of: inode) }

    /// Whether a rule for `operation` could match calls on `inode` (a
    /// `flush` rule: the kernel must send a read-only file's close).
    func mayFail(_ operation: FaultOperation, of inode: Inode) -> Bool {
        guard isArmed, book.withLock({ $0.couldMatch(operation, path: nil) }) else { return false }
        let path = relativePath(of: inode)
        return book.withLock { $0 }.couldMatch(operation, path: path)
    }

    /// Logs a short write once it is done.
    func noteShortWrite(_ firing: FaultFiring, _ call: FaultCall, wrote written: Int, of total: Int) {
        record(firing, call, result: "wrote \(written) of \(total) bytes")
    }

    private func record(_ firing: FaultFiring, _ call: FaultCall, result: String) {
        log.append(FaultLog.Record(
            time: WallClock.seconds(), rule: firing.rule, operation: call.operations.primary, path: call.path,
            pid: call.pid, action: firing.action, result: result))
    }

    /// Sleeps `nanoseconds` holding nothing; returns what happened, for the log.
    private func delay(_ nanoseconds: UInt64, _ request: fuse_req_t?) -> String {
        let text = FaultAction.delay(nanoseconds: nanoseconds).summary
        guard delayed.add(1, ordering: .relaxed).newValue <= Self.maximumDelayed else {
            delayed.subtract(1, ordering: .relaxed)
            return "not delayed: \(Self.maximumDelayed) calls are being delayed already"
        }
        defer { delayed.subtract(1, ordering: .relaxed) }
        guard KernelWire.mayWait() else {
            return "not delayed: half of this CPU's ring threads are being delayed already"
        }
        defer { KernelWire.doneWaiting() }
        let deadline = WallClock.nanoseconds() &+ nanoseconds
        while true {
            let now = WallClock.nanoseconds()
            if now >= deadline { return "delayed" + text.dropFirst("delay".count) }
            if fuse_req_interrupted(request) != 0 { return "delay cut short: the caller was interrupted" }
            let bits = session.load(ordering: .acquiring)
            if bits != 0, fuse_session_exited(OpaquePointer(bitPattern: bits)) != 0 { return "delay cut short: unmounting" }
            CurrentProcess.sleep(nanoseconds: min(deadline - now, 50_000_000))
        }
    }

    /// The path of a node relative to the container (the root is empty), as
    /// the kernel shows its descriptor; `?` when that is not in the container.
    func relativePath(of inode: Inode) -> String {
        guard let path = try? inode.withDescriptor({ (file) throws(Errno) in file.currentPath() }) ?? nil else { return "?" }
        if path == containerPath { return "" }
        let prefix = containerPath == "/" ? "/" : containerPath + "/"
        return path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : "?"
    }
}

extension FaultInjector {
    /// The most the listing may hold: an extended attribute's value is at most 64 KiB.
    static let listingLimit = 60_000

    /// A write of the root's `user.purgefs.faults`: `add RULE` (RULE as a
    /// rules file line), `clear`, or `clear ID`. `EINVAL` for a bad request
    /// or rule, `ENOENT` for no rule ID, `ENOSPC` when the listing is full.
    func apply(_ text: String) throws(Errno) {
        if text == "clear" {
            _ = clear(nil)
        } else if text.hasPrefix("clear ") {
            guard let id = Int(text.dropFirst("clear ".count)) else { throw Errno.invalidArgument }
            guard clear(id) else { throw Errno.noEntry }
        } else if text.hasPrefix("add ") {
            let rule: FaultRule
            do throws(FaultRuleError) {
                rule = try FaultRule(arguments: FaultRuleFile.words(of: text.dropFirst("add ".count)))
            } catch {
                Diagnostics.note("refused fault rule '\(text.prefix(200))': \(error)")
                throw Errno.invalidArgument
            }
            guard listing.utf8.count + rule.line.utf8.count + 64 <= Self.listingLimit else { throw Errno.noSpace }
            add(rule)
        } else {
            throw Errno.invalidArgument
        }
    }
}

/// The root's `user.purgefs.faults`: read, the listing; write, `apply`.
/// How the kernel may serve a file a rule could match: its reads and
/// flushes must reach the injector.
extension FaultInjector: ServingPolicy {
    func mustSeeReads(of inode: Inode) -> Bool { mayFailReads(of: inode) }
    func mustSeeFlush(of inode: Inode) -> Bool { mayFail(.flush, of: inode) }
    /// A read rule could match it: its reads must reach the injector.
    func refusesPassthrough(_ inode: Inode) -> Bool { mayFailReads(of: inode) }
}

extension FaultInjector: AttributeProvider {
    var attributes: [PurgeAttribute] { [.faults] }

    func value(of attribute: PurgeAttribute, on inode: Inode) throws(Errno) -> String { listing }

    func set(_ attribute: PurgeAttribute, on inode: Inode, to value: AttributeValue) throws(Errno) {
        try apply(value.text)
    }
}
