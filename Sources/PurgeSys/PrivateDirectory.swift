import Glibc

/// A directory that only its owner may change: the runtime directory, a
/// shared device's folders, the state directory. Each is made, opened and
/// checked through its parent's descriptor (`mkdirat`, then `openat` with
/// `O_NOFOLLOW | O_DIRECTORY`, then `fstat` of what was opened), so what is
/// checked is what is used: a symbolic link, or a directory swapped in
/// between a check by path and an open, is never followed.
///
/// Refused: a symbolic link, something not a directory, a directory of
/// another user, and (unless `tightensWritable`) one that its group or
/// others may write, in which anyone could have put anything. A directory
/// of the right owner that grants more than `mode` otherwise (made by an
/// older purgefs, `0755`, or by the user under a looser umask) is tightened
/// to `mode`.
public enum PrivateDirectory {
    /// Why a directory cannot be used: its path and the reason, one line.
    public struct Refusal: Error, Equatable, CustomStringConvertible {
        public var path: String
        public var reason: String
        /// It does not exist (and was not to be made).
        public var isMissing: Bool

        public init(path: String, reason: String, isMissing: Bool = false) {
            self.path = path
            self.reason = reason
            self.isMissing = isMissing
        }

        public var description: String { "\(path) \(reason)" }
    }

    /// Opens `name` in `parent` (whose path is `parentPath`), making it with
    /// `mode` first when `create`. `owner` is who must own it: the caller's
    /// effective user by default (root's directory, read by another user,
    /// is checked with `owner: 0`); only its owner tightens it.
    public static func open(_ name: String, in parent: FileDescriptor, parentPath: String, mode: mode_t = 0o700,
                            create: Bool, owner: uid_t = geteuid(), tightensWritable: Bool = false) throws(Refusal) -> FileDescriptor {
        let path = parentPath == "/" ? "/" + name : parentPath + "/" + name
        if create {
            do throws(Errno) { try parent.makeDirectory(name, mode: mode) } catch where error == .exists {} catch {
                throw Refusal(path: path, reason: "cannot be made: \(error)")
            }
        }
        let directory: FileDescriptor
        do {
            directory = try FileDescriptor.open(name, in: parent, flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
        } catch {
            throw refusal(path, opening: error, in: parent, name: name)
        }
        do throws(Refusal) {
            try check(directory, path: path, mode: mode, owner: owner, tightensWritable: tightensWritable)
        } catch {
            directory.closeQuietly()
            throw error
        }
        return directory
    }

    /// Opens the directory at `path` (absolute), its parent by path: the
    /// parent is one the user chose or the system's (`/tmp`, `/run`).
    public static func open(path: String, mode: mode_t = 0o700, create: Bool, owner: uid_t = geteuid(),
                            tightensWritable: Bool = false) throws(Refusal) -> FileDescriptor {
        let slash = path.lastIndex(of: "/") ?? path.startIndex
        let parentPath = slash == path.startIndex ? "/" : String(path[..<slash])
        let name = String(path[path.index(after: slash)...])
        let parent: FileDescriptor
        do { parent = try FileDescriptor.open(path: parentPath, flags: OpenFlags.path | O_DIRECTORY) } catch {
            throw Refusal(path: parentPath, reason: "cannot be opened: \(error)", isMissing: error == .noEntry && !create)
        }
        defer { parent.closeQuietly() }
        return try open(name, in: parent, parentPath: parentPath, mode: mode, create: create, owner: owner,
                        tightensWritable: tightensWritable)
    }

    /// Checks the opened directory as the type says, tightening it if it is its owner's own.
    public static func check(_ directory: FileDescriptor, path: String, mode: mode_t, owner: uid_t = geteuid(),
                             tightensWritable: Bool = false) throws(Refusal) {
        let status: stat
        do { status = try directory.status() } catch { throw Refusal(path: path, reason: "cannot be examined: \(error)") }
        guard status.st_uid == owner else {
            throw Refusal(path: path, reason: "belongs to uid \(status.st_uid), not to uid \(owner): "
                          + "another user may have made it; only its owner may use it")
        }
        let bits = status.st_mode & 0o7777
        if bits & 0o022 != 0 && !tightensWritable {
            throw Refusal(path: path, reason: "may be written by its group or others (mode \(octal(bits))): "
                          + "anyone may have put files in it; remove it, or make it \(octal(mode)) if what is in it is yours")
        }
        guard bits & ~mode != 0 else { return }
        guard owner == geteuid() else { return }  // not ours to tighten; nobody else may write it
        do { try directory.changeMode(mode) } catch {
            throw Refusal(path: path, reason: "has mode \(octal(bits)) and cannot be made \(octal(mode)): \(error)")
        }
    }

    private static func refusal(_ path: String, opening error: Errno, in parent: FileDescriptor, name: String) -> Refusal {
        switch error {
        case .noEntry:
            return Refusal(path: path, reason: "does not exist", isMissing: true)
        case .tooManySymlinks:
            return Refusal(path: path, reason: "is a symbolic link: refused, it could lead anywhere")
        case .notDirectory:
            let isLink = ((try? parent.status(of: name)).map { $0.st_mode & S_IFMT == S_IFLNK }) ?? false
            return Refusal(path: path, reason: isLink ? "is a symbolic link: refused, it could lead anywhere" : "is not a directory")
        default:
            return Refusal(path: path, reason: "cannot be opened: \(error)")
        }
    }

    static func octal(_ mode: mode_t) -> String { "0" + String(mode, radix: 8) }
}

extension FileDescriptor {
    /// The bytes of the regular file `name` in this directory, when it is at
    /// most `limit` bytes long: what a file another process may have written
    /// is read with. Not a symbolic link (`O_NOFOLLOW`), not a FIFO or device
    /// (opened `O_NONBLOCK`, then `fstat`: a FIFO would block the open, a
    /// device read forever): those are `EINVAL`; a longer file `EFBIG`.
    public func readRegularFile(_ name: String, limit: Int) throws(Errno) -> [UInt8] {
        let file = try FileDescriptor.open(name, in: self, flags: O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
        defer { file.closeQuietly() }
        let status = try file.status()
        guard status.st_mode & S_IFMT == S_IFREG else { throw .invalidArgument }
        guard status.st_size <= limit else { throw Errno(EFBIG) }
        let bytes = try file.readAll(limit: limit + 1)
        guard bytes.count <= limit else { throw Errno(EFBIG) }
        return bytes
    }
}
