import Glibc
import PurgeCore
import PurgeSys

/// The remote store `cloud=DIR`, reached with POSIX calls only (so local
/// disk, NFS or an object store mounted as a filesystem all serve), in
/// `CloudStore`'s layout. An upload is written under `incoming`, synced,
/// and renamed into `files`, so a file under `files` is always a complete
/// upload. Nothing to prepare: a directory that cannot be used fails each
/// call (the mount goes on, the uploads are retried).
struct CloudDirectory: CloudStore {
    let path: String

    static let filesName = "files"
    static let incomingName = "incoming"

    func prepare() throws(CloudFailure) {}
    func stop() {}

    /// The remote's `files` and `incoming` directories, made if missing.
    func open() throws(Errno) -> (files: FileDescriptor, incoming: FileDescriptor) {
        let root = try FileDescriptor.open(path: path, flags: O_RDONLY | O_DIRECTORY)
        defer { root.closeQuietly() }
        for name in [Self.filesName, Self.incomingName] {
            do { try Self.makeDirectory(name, in: root) } catch where error == .exists {}
        }
        let files = try Self.open(Self.filesName, in: root, flags: O_RDONLY | O_DIRECTORY)
        do {
            return (files, try Self.open(Self.incomingName, in: root, flags: O_RDONLY | O_DIRECTORY))
        } catch {
            files.closeQuietly()
            throw error
        }
    }

    /// Copies `local` (open for reading) to `path` atomically: aside in
    /// `incoming`, synced, renamed into place if `isUnchanged()`. Returns the
    /// remote copy's status.
    func upload(_ local: FileDescriptor, size: UInt64, mode: mode_t, to path: String,
                isUnchanged: () -> Bool) throws(CloudFailure) -> stat {
        let status = try CloudFailure.wrapping { () throws(Errno) in
            try upload(local, size: size, mode: mode, at: path, isUnchanged: isUnchanged)
        }
        guard let status else { throw .changedWhileCopied }
        return status
    }

    /// Nil, with nothing moved into place, when `isUnchanged()` fails after the copy.
    private func upload(_ local: FileDescriptor, size: UInt64, mode: mode_t, at path: String,
                        isUnchanged: () -> Bool) throws(Errno) -> stat? {
        let (files, incoming) = try open()
        defer { files.closeQuietly(); incoming.closeQuietly() }
        let temporary = "\(CurrentProcess.id)-\(WallClock.nanoseconds())"
        let copy = try Self.open(temporary, in: incoming, flags: O_WRONLY | O_CREAT | O_EXCL, mode: mode & 0o7777)
        var uploaded = stat()
        do {
            try Self.copy(from: local, to: copy, size: size)
            try copy.sync()
            uploaded = try copy.status()
            try copy.close()
        } catch {
            copy.closeQuietly()
            try? Self.unlink(temporary, in: incoming)
            throw error
        }
        guard isUnchanged() else {
            try? Self.unlink(temporary, in: incoming)
            return nil
        }
        do {
            try Self.makeParents(of: path, in: files)
            try Self.rename(temporary, in: incoming, to: path, in: files)
            try files.sync()
        } catch {
            try? Self.unlink(temporary, in: incoming)
            throw error
        }
        return uploaded
    }

    /// Removes what uploads killed midway left in `incoming` (by this device
    /// or another): files untouched for `age` seconds. An upload under way
    /// writes all the time; one stalled that long finds its file gone at the
    /// rename, fails, and is tried again. Returns the names removed.
    @discardableResult
    func removeStaleUploads(olderThan age: Int) -> [String] {
        guard let (files, incoming) = try? open() else { return [] }
        defer { files.closeQuietly(); incoming.closeQuietly() }
        guard let stream = try? DirectoryStream(incoming) else { return [] }
        let cutoff = Int(WallClock.seconds()) - age
        var stale: [String] = []
        while let entry = try? stream.next() {
            guard !entry.isDotOrDotDot, let status = try? incoming.status(of: entry.name),
                  status.st_mode & S_IFMT == S_IFREG, Int(status.st_mtim.tv_sec) < cutoff
            else { continue }
            stale.append(String(cString: entry.name))
        }
        return stale.filter { (try? Self.unlink($0, in: incoming)) != nil }
    }

    /// The remote copy's status now (not following a symlink, not opening
    /// it), nil when there is none or it is not a regular file.
    func status(_ path: String) throws(CloudFailure) -> stat? {
        let (files, incoming) = try CloudFailure.wrapping { () throws(Errno) in try open() }
        defer { files.closeQuietly(); incoming.closeQuietly() }
        let status: stat
        do throws(Errno) {
            status = try path.withCString { name in Result { () throws(Errno) -> stat in try files.status(of: name) } }.get()
        } catch where error == .noEntry {
            return nil
        } catch {
            throw CloudFailure(error)
        }
        return status.st_mode & S_IFMT == S_IFREG ? status : nil
    }

    /// The remote copy of `path`, opened for reading (not following a
    /// symlink): a FIFO there blocks, like a server that does not answer.
    func download(_ path: String) throws(CloudFailure) -> any CloudDownload {
        try CloudFailure.wrapping { () throws(Errno) -> any CloudDownload in
            let (files, incoming) = try open()
            defer { files.closeQuietly(); incoming.closeQuietly() }
            let source = try Self.open(path, in: files, flags: O_RDONLY | O_NOFOLLOW)
            do throws(Errno) {
                let status = try source.status()
                guard status.st_mode & S_IFMT == S_IFREG else { throw Errno.ioError }  // not a document
                return Copy(source: source, status: status)
            } catch {
                source.closeQuietly()
                throw error
            }
        }
    }

    private struct Copy: CloudDownload {
        let source: FileDescriptor
        let status: stat

        func copy(to file: FileDescriptor, size: UInt64) throws(CloudFailure) {
            try CloudFailure.wrapping { () throws(Errno) in try CloudDirectory.copy(from: source, to: file, size: size) }
        }

        func close() { source.closeQuietly() }
    }

    func remove(_ path: String) throws(CloudFailure) {
        try CloudFailure.wrapping { () throws(Errno) in try removeTree(path) }
    }

    private func removeTree(_ path: String) throws(Errno) {
        let (files, incoming) = try open()
        defer { files.closeQuietly(); incoming.closeQuietly() }
        do { try Self.unlink(path, in: files) } catch where error == .noEntry {
        } catch where error == .isDirectory {
            try Paths.removeTree(self.path + "/" + Self.filesName + "/" + path)
        }
    }

    func rename(_ from: String, to: String) throws(CloudFailure) {
        try CloudFailure.wrapping { () throws(Errno) in try move(from, to: to) }
    }

    private func move(_ from: String, to: String) throws(Errno) {
        let (files, incoming) = try open()
        defer { files.closeQuietly(); incoming.closeQuietly() }
        try Self.makeParents(of: to, in: files)
        do { try Self.rename(from, in: files, to: to, in: files) } catch where error == .noEntry {}
        try files.sync()
    }

    /// Every regular file under `files`, by relative path.
    func list() throws(CloudFailure) -> [(String, stat)] {
        try CloudFailure.wrapping { () throws(Errno) -> [(String, stat)] in
            let (files, incoming) = try open()
            defer { files.closeQuietly(); incoming.closeQuietly() }
            return try TreeWalk(root: files).regularFiles().map { ($0.path, $0.status) }
        }
    }

    // MARK: Plumbing

    static func copy(from source: FileDescriptor, to destination: FileDescriptor, size: UInt64) throws(Errno) {
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset: Int64 = 0
        while UInt64(offset) < size {
            let count = try buffer.withUnsafeMutableBytes { raw in
                Result { () throws(Errno) -> Int in try source.read(into: raw, at: offset) }
            }.get()
            if count == 0 { break }
            var written = 0
            while written < count {
                let chunk = try buffer.withUnsafeBytes { raw in
                    Result { () throws(Errno) -> Int in
                        try destination.write(UnsafeRawBufferPointer(rebasing: raw[written..<count]), at: offset + Int64(written))
                    }
                }.get()
                written += chunk
            }
            offset += Int64(count)
        }
        // A source that ends early (changed, or cut off) is not a whole copy.
        if UInt64(offset) < size { throw Errno.ioError }
    }

    static func open(_ path: String, in directory: FileDescriptor, flags: Int32, mode: mode_t = 0) throws(Errno) -> FileDescriptor {
        try path.withCString { name in
            Result { () throws(Errno) -> FileDescriptor in try FileDescriptor.open(name, in: directory, flags: flags, mode: mode) }
        }.get()
    }

    static func makeDirectory(_ path: String, in directory: FileDescriptor, mode: mode_t = 0o755) throws(Errno) {
        try path.withCString { name in
            Result { () throws(Errno) in try directory.makeDirectory(name, mode: mode) }
        }.get()
    }

    static func unlink(_ path: String, in directory: FileDescriptor) throws(Errno) {
        try path.withCString { name in Result { () throws(Errno) in try directory.unlink(name) } }.get()
    }

    static func rename(_ from: String, in source: FileDescriptor, to: String, in destination: FileDescriptor) throws(Errno) {
        try from.withCString { old in
            to.withCString { new in Result { () throws(Errno) in try source.rename(old, to: new, in: destination) } }
        }.get()
    }

    /// Makes the directories above `path`, one component at a time.
    static func makeParents(of path: String, in directory: FileDescriptor) throws(Errno) {
        let components = path.split(separator: "/").dropLast()
        var prefix = ""
        for component in components {
            prefix += (prefix.isEmpty ? "" : "/") + component
            do { try makeDirectory(prefix, in: directory) } catch where error == .exists {}
        }
    }
}
