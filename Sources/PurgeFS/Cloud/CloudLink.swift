import CLinux
import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// The tier's way to its remote: the store (`CloudStore`) behind the
/// network's faults. Every remote call of the tier goes through here, and
/// each is first checked against the offline state (`purgefs cloud
/// offline`: every call fails at once as unreachable) and the mount's fault
/// rules for the cloud operations (`upload`, `download`, `remote-delete`,
/// `remote-list`). `touch` stands for another device and is never faulted.
final class CloudLink: Sendable {
    let store: any CloudStore
    private let offline = Atomic<Bool>(false)
    /// The mount's fault rules, once the filesystem exists.
    private let faults = Mutex<FaultInjector?>(nil)

    init(store: any CloudStore) {
        self.store = store
    }

    func attach(faults injector: FaultInjector) { faults.withLock { $0 = injector } }

    var isOffline: Bool { offline.load(ordering: .acquiring) }

    func setOffline(_ value: Bool) { offline.store(value, ordering: .releasing) }

    private func admit(_ operation: FaultOperation, _ path: String) throws(CloudFailure) {
        if isOffline { throw .offline }
        guard let injector = faults.withLock({ $0 }) else { return }
        switch injector.admitCloud(operation, path: path) {
        case .proceed: return
        case .offline: throw .offline
        case .fail(let errno): throw CloudFailure(errno, "\(errno) (fault rule on \(operation.rawValue))")
        }
    }

    func upload(_ local: FileDescriptor, size: UInt64, mode: mode_t, to path: String,
                isUnchanged: () -> Bool) throws(CloudFailure) -> stat {
        try admit(.upload, path)
        return try store.upload(local, size: size, mode: mode, to: path, isUnchanged: isUnchanged)
    }

    func download(_ path: String) throws(CloudFailure) -> any CloudDownload {
        try admit(.download, path)
        return try store.download(path)
    }

    /// The remote copy's status, nil when there is none or it cannot be read.
    func status(_ path: String) -> stat? {
        guard (try? admit(.remoteList, path)) != nil else { return nil }
        return (try? store.status(path)) ?? nil
    }

    /// The remote copy's status, nil when there is none; a remote that
    /// cannot be asked (offline, a `remote-list` rule, an error) throws.
    func copyStatus(_ path: String) throws(CloudFailure) -> stat? {
        try admit(.remoteList, path)
        return try store.status(path)
    }

    func remove(_ path: String) throws(CloudFailure) {
        try admit(.remoteDelete, path)
        try store.remove(path)
    }

    /// Counted as a `remote-delete` of the old name, which it removes.
    func rename(_ from: String, to: String) throws(CloudFailure) {
        try admit(.remoteDelete, from)
        try store.rename(from, to: to)
    }

    /// Matched by `remote-list` rules as the path "" (the remote's root), and by `**`.
    func list() throws(CloudFailure) -> [(String, stat)] {
        try admit(.remoteList, "")
        return try store.list()
    }

    func removeStaleUploads(olderThan age: Int) -> [String] {
        guard (try? admit(.remoteList, "")) != nil else { return [] }
        return store.removeStaleUploads(olderThan: age)
    }

    /// What another device does when it saves `path` again: the remote copy
    /// is replaced by a new upload of its content (through a temporary
    /// file in `scratch`, a directory), so its modification time is new and
    /// this device sees `download_status` `downloaded`. No fault applies.
    ///
    /// The content and so the size stay the same: a store that keeps times
    /// to the second (WebDAV) gives an upload in the same second as the last
    /// one the same time, the same version to the tier (`CloudRecord.isNewer`).
    /// Then it is uploaded again in the next second (twice at most).
    func touch(_ path: String, scratch: FileDescriptor) throws(CloudFailure) {
        let source = try store.download(path)
        defer { source.close() }
        let size = UInt64(source.status.st_size)
        let copy = try CloudFailure.wrapping { () throws(Errno) in
            try FileDescriptor.open(".", in: scratch, flags: clinux_O_TMPFILE | O_RDWR, mode: 0o600)
        }
        defer { copy.closeQuietly() }
        try source.copy(to: copy, size: size)
        let old = CloudRecord(signature: CloudSignature(source.status), evicted: false, remote: source.status)
        for attempt in 1...Self.touchAttempts {
            let new = try store.upload(copy, size: size, mode: source.status.st_mode, to: path) { true }  // a file of its own
            if old.remoteModified == 0 || old.isNewer(new) { return }  // a store without times: nothing more to do
            if attempt < Self.touchAttempts { CurrentProcess.sleep(milliseconds: 1000) }
        }
        throw CloudFailure(.ioError, "the remote keeps the same size and time for the new copy as for the old one")
    }

    /// Uploads `touch` makes before giving up on a remote whose time does not move.
    static let touchAttempts = 3
}
