import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// The remote store `cloud=rclone:REMOTE:PATH`: any of rclone's backends,
/// through one `rclone rcd` (`RcloneDaemon`) and its remote-control API, in
/// `CloudStore`'s layout under `REMOTE:PATH`.
///
/// | tier's call | rc commands |
/// |---|---|
/// | upload | `operations/uploadfile` to `incoming/<pid>-<time>`, `operations/movefile` into `files/`, `operations/stat` |
/// | download | `operations/stat`, then a GET of the object (`--rc-serve`) |
/// | status | `operations/stat` |
/// | remove | `operations/stat`, then `operations/deletefile`, or `operations/purge` for a directory |
/// | rename | `operations/stat`, then `operations/movefile`, or `sync/move` for a directory |
/// | list | `operations/list` of `files`, recursive, files only |
///
/// What differs from a directory: an object store has no rename, so
/// `movefile` is a server-side copy and a delete (S3: every byte copied on the
/// server), a directory's rename moves each object in it, and a move into
/// `files` is as atomic as the backend's copy (S3's is: an object appears
/// whole or not at all). No mode is kept (documents come back `0644`), and the
/// modification time is the upload's time as the backend keeps it (WebDAV
/// to the second).
final class RcloneStore: CloudStore {
    let remote: String
    let path: String
    private let state: FileDescriptor
    private let daemon = Mutex<RcloneDaemon?>(nil)

    init(remote: String, path: String, state: FileDescriptor) {
        self.remote = remote
        self.path = path
        self.state = state
    }

    /// The rclone `fs` of `sub` under the store's root: `REMOTE:PATH/sub`.
    func fs(_ sub: String = "") -> String {
        let trimmed = path.hasSuffix("/") ? String(path.dropLast()) : path
        let joined = trimmed.isEmpty ? sub : sub.isEmpty ? trimmed : trimmed + "/" + sub
        return remote + ":" + joined
    }

    private func client() throws(CloudFailure) -> RcloneClient {
        guard let daemon = daemon.withLock({ $0 }) else { throw CloudFailure(.notConnected, "rclone is not running") }
        return RcloneClient(socketPath: daemon.socketPath, authorization: daemon.authorization)
    }

    /// Starts rclone and checks the remote: `files` made (which on S3 makes
    /// the bucket, and fails for credentials it refuses).
    func prepare() throws(CloudFailure) {
        guard let statePath = state.currentPath() else { throw CloudFailure(.ioError, "cannot find the state directory's path") }
        let started = try RcloneDaemon.start(statePath: statePath, state: state)
        daemon.withLock { $0 = started }
        // One call: each is an HTTP request to rclone and more to the remote, and
        // the reconcile at mount lists the remote next. `incoming` is made by
        // the first upload.
        _ = try client().call("operations/mkdir", RcloneReply.request([("fs", fs()), ("remote", CloudDirectory.filesName)]))
    }

    func stop() {
        daemon.withLock { current in
            current?.stop()
            current = nil
        }
    }

    func upload(_ local: FileDescriptor, size: UInt64, mode: mode_t, to path: String,
                isUnchanged: () -> Bool) throws(CloudFailure) -> stat {
        let client = try client()
        let temporary = "\(CurrentProcess.id)-\(WallClock.nanoseconds())"
        let incoming = CloudDirectory.incomingName + "/" + temporary
        do throws(CloudFailure) {
            // rclone stores a request body that arrived whole (its length is the request's), or nothing.
            try client.upload(local, size: size, fs: fs(), directory: CloudDirectory.incomingName, name: temporary)
            guard isUnchanged() else { throw .changedWhileCopied }
            _ = try client.call("operations/movefile", RcloneReply.request([
                ("srcFs", fs()), ("srcRemote", incoming), ("dstFs", fs()), ("dstRemote", files(path)),
            ], raw: Self.overWhateverIsThere))
        } catch {
            _ = try? client.call("operations/deletefile", RcloneReply.request([("fs", fs()), ("remote", incoming)]))
            throw error
        }
        guard let status = try status(path), UInt64(status.st_size) == size else {
            throw CloudFailure(.ioError, "the uploaded copy is not on the remote after its move, or not whole")
        }
        return status
    }

    func download(_ path: String) throws(CloudFailure) -> any CloudDownload {
        guard let status = try status(path) else { throw CloudFailure(.noEntry, "no remote copy") }
        return Fetch(client: try client(), fs: fs(), remote: files(path), status: status)
    }

    private struct Fetch: CloudDownload {
        let client: RcloneClient
        let fs: String
        let remote: String
        let status: stat

        func copy(to file: FileDescriptor, size: UInt64) throws(CloudFailure) {
            try client.download(fs: fs, remote: remote, size: size, into: file)
        }

        func close() {}
    }

    func status(_ path: String) throws(CloudFailure) -> stat? {
        guard let item = try item(files(path)), !item.isDirectory else { return nil }
        return Self.status(of: item)
    }

    func remove(_ path: String) throws(CloudFailure) {
        guard let item = try item(files(path)) else { return }
        let client = try client()
        do throws(CloudFailure) {
            _ = try client.call(item.isDirectory ? "operations/purge" : "operations/deletefile",
                                RcloneReply.request([("fs", fs()), ("remote", files(path))]))
        } catch where error.errno == .noEntry {}  // gone meanwhile
    }

    func rename(_ from: String, to: String) throws(CloudFailure) {
        guard let item = try item(files(from)) else { return }
        let client = try client()
        if item.isDirectory {
            _ = try client.call("sync/move", RcloneReply.request(
                [("srcFs", fs(files(from))), ("dstFs", fs(files(to)))],
                raw: [("deleteEmptySrcDirs", "true")] + Self.overWhateverIsThere))
        } else {
            _ = try client.call("operations/movefile", RcloneReply.request([
                ("srcFs", fs()), ("srcRemote", files(from)), ("dstFs", fs()), ("dstRemote", files(to)),
            ], raw: Self.overWhateverIsThere))
        }
    }

    /// A move's `_config`: replace whatever the destination holds. Left to
    /// compare, rclone takes a file of the same size for the same file on a
    /// store without modification times (WebDAV): it keeps the old one and
    /// deletes what was moved, so a new version of the same size was lost.
    private static let overWhateverIsThere = [("_config", #"{"NoCheckDest":true}"#)]

    func list() throws(CloudFailure) -> [(String, stat)] {
        let prefix = CloudDirectory.filesName + "/"
        return try items(in: CloudDirectory.filesName, recursive: true).compactMap { item in
            guard item.path.hasPrefix(prefix) else { return nil }
            return (String(item.path.dropFirst(prefix.count)), Self.status(of: item))
        }
    }

    func removeStaleUploads(olderThan age: Int) -> [String] {
        guard let client = try? client(), let found = try? items(in: CloudDirectory.incomingName, recursive: false) else { return [] }
        let cutoff = (WallClock.nanoseconds() / 1_000_000_000 - UInt64(max(age, 0))) * 1_000_000_000
        return found.filter { $0.modified < cutoff }.compactMap { item in
            guard (try? client.call("operations/deletefile", RcloneReply.request([("fs", fs()), ("remote", item.path)]))) != nil
            else { return nil }
            return String(item.path.dropFirst(CloudDirectory.incomingName.count + 1))
        }
    }

    // MARK: Plumbing

    private func files(_ path: String) -> String { CloudDirectory.filesName + "/" + path }

    /// What is at `remote` (relative to the root), nil when nothing is.
    private func item(_ remote: String) throws(CloudFailure) -> RcloneItem? {
        let reply = try client().call("operations/stat", RcloneReply.request([("fs", fs()), ("remote", remote)]))
        guard let item = RcloneReply.stat(reply) else { throw CloudFailure(.ioError, "rclone's stat answer is malformed") }
        return item
    }

    /// The files in `directory` (relative to the root), paths relative to the root.
    private func items(in directory: String, recursive: Bool) throws(CloudFailure) -> [RcloneItem] {
        let reply: JSONValue
        do throws(CloudFailure) {
            reply = try client().call("operations/list", RcloneReply.request(
                [("fs", fs()), ("remote", directory)], raw: [("opt", "{\"recurse\":\(recursive),\"filesOnly\":true}")]))
        } catch where error.errno == .noEntry || error.description.contains("directory not found") {
            return []  // an object store has no empty directories
        }
        guard let items = RcloneReply.list(reply) else { throw CloudFailure(.ioError, "rclone's list answer is malformed") }
        return items.filter { !$0.isDirectory }
    }

    /// A document's status as the tier reads one: size, times, `0644`.
    static func status(of item: RcloneItem) -> stat {
        var status = stat()
        status.st_mode = S_IFREG | 0o644
        status.st_size = Int(item.size)
        status.st_nlink = 1
        let time = timespec(tv_sec: Int(item.modified / 1_000_000_000), tv_nsec: Int(item.modified % 1_000_000_000))
        status.st_mtim = time
        status.st_atim = time
        status.st_ctim = time
        return status
    }
}
