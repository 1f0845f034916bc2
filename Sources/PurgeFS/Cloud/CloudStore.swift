import Glibc
import PurgeCore
import PurgeSys

/// The remote side of the cloud tier: every call the tier makes to its
/// remote is one of these, whatever the remote is (`CloudDirectory` for
/// `cloud=DIR`, `RcloneStore` for `cloud=rclone:REMOTE:PATH`). The tier
/// reaches it only through `CloudLink`, which puts the network's faults in
/// front of it.
///
/// The layout is the same on every store, relative to its root:
///
/// ```
/// files/<path relative to the container>   the uploaded documents
/// incoming/<pid>-<time>                    uploads in progress
/// ```
/// An upload goes to a temporary name under `incoming`, then moves into
/// `files`: a document under `files` is always a whole upload.
///
/// Statuses are `stat`s: a store that keeps no mode answers `0644`; sizes and
/// modification times are what the store says (rclone's to the nanosecond
/// where the backend keeps them, WebDAV's to the second).
protocol CloudStore: Sendable {
    /// At mount, before anything is mounted: whatever the store needs to be
    /// reachable (rclone's daemon started, the remote checked). A failure
    /// here is said to the user in one line and nothing is mounted.
    func prepare() throws(CloudFailure)

    /// Copies `local` (open for reading, `size` bytes) to `path` whole:
    /// under a temporary name in `incoming`, then moved into place, but only
    /// if `isUnchanged()` still holds once the copy is complete (else the
    /// temporary copy is removed and `.changedWhileCopied` thrown: a file
    /// written to during the copy never lands torn). Returns the remote
    /// copy's status.
    func upload(_ local: FileDescriptor, size: UInt64, mode: mode_t, to path: String,
                isUnchanged: () -> Bool) throws(CloudFailure) -> stat

    /// The remote copy of `path`, ready to be copied into a local file.
    func download(_ path: String) throws(CloudFailure) -> any CloudDownload

    /// The remote copy's status, nil when there is none (or it is no document).
    func status(_ path: String) throws(CloudFailure) -> stat?

    /// Removes the remote copy of `path` (a document or a directory's tree); a missing one is fine.
    func remove(_ path: String) throws(CloudFailure)

    /// Renames the remote copy of `from` (document or directory) to `to`; a missing one is fine.
    func rename(_ from: String, to: String) throws(CloudFailure)

    /// Every document under `files`, by path relative to it.
    func list() throws(CloudFailure) -> [(String, stat)]

    /// Removes what uploads killed midway left in `incoming` (by this device
    /// or another): uploads untouched for `age` seconds. Returns their names.
    func removeStaleUploads(olderThan age: Int) -> [String]

    /// At unmount (and when the mount fails after `prepare`).
    func stop()
}

/// A remote document being downloaded (`CloudStore.download`).
protocol CloudDownload {
    /// The remote copy's status, read before its data.
    var status: stat { get }
    /// Writes the first `size` bytes of the copy into `file` from offset 0;
    /// a copy that ends early, or is of another size, is an error.
    func copy(to file: FileDescriptor, size: UInt64) throws(CloudFailure)
    func close()
}

/// Why a remote call failed: the errno the tier acts on, and what the log says.
struct CloudFailure: Error, Equatable, CustomStringConvertible {
    var errno: Errno
    var description: String

    init(_ errno: Errno) {
        self.errno = errno
        description = "\(errno)"
    }

    init(_ errno: Errno, _ description: String) {
        self.errno = errno
        self.description = description
    }

    /// The tier is offline (`purgefs cloud offline`, or a rule's `--offline`):
    /// every transfer fails at once, as for a network that cannot be reached.
    static let offline = CloudFailure(.networkUnreachable, "offline")

    /// The local file changed while it was copied: nothing was moved into place.
    static let changedWhileCopied = CloudFailure(.busy, "the file changed while it was copied")
}

extension CloudFailure {
    /// `body`'s errno as a failure.
    static func wrapping<T>(_ body: () throws(Errno) -> T) throws(CloudFailure) -> T {
        do throws(Errno) { return try body() } catch { throw CloudFailure(error) }
    }
}
