internal import CLinux
import Foundation
import Glibc

/// The result of one operation, in a form that can be compared between a
/// native directory and the mount.
enum Outcome: CustomStringConvertible {
    /// Success, with what the call returned or what a follow-up read showed.
    case success(String, approx: [Approx] = [])
    /// The call failed with this errno.
    case failure(Int32)

    /// A number that only has to match within a tolerance (block counts).
    struct Approx {
        var name: String
        var value: Int64
        var tolerance: Int64
    }

    func matches(_ other: Outcome) -> Bool {
        switch (self, other) {
        case (.failure(let a), .failure(let b)):
            return a == b
        case (.success(let a, let approxA), .success(let b, let approxB)):
            guard a == b, approxA.count == approxB.count else { return false }
            return zip(approxA, approxB).allSatisfy { x, y in
                x.name == y.name && abs(x.value - y.value) <= max(x.tolerance, y.tolerance)
            }
        default:
            return false
        }
    }

    var description: String {
        switch self {
        case .failure(let code): return "fails with \(Errno.name(code))"
        case .success(let text, let approx):
            let extra = approx.map { "\($0.name)≈\($0.value)" }.joined(separator: " ")
            let shown = [text, extra].filter { !$0.isEmpty }.joined(separator: " ")
            return shown.isEmpty ? "ok" : "ok: \(shown)"
        }
    }
}

enum Errno {
    static let names: [Int32: String] = [
        EPERM: "EPERM", ENOENT: "ENOENT", EIO: "EIO", ENXIO: "ENXIO", EBADF: "EBADF",
        EAGAIN: "EAGAIN", ENOMEM: "ENOMEM", EACCES: "EACCES", EFAULT: "EFAULT", EBUSY: "EBUSY",
        EEXIST: "EEXIST", EXDEV: "EXDEV", ENODEV: "ENODEV", ENOTDIR: "ENOTDIR", EISDIR: "EISDIR",
        EINVAL: "EINVAL", ENFILE: "ENFILE", EMFILE: "EMFILE", ETXTBSY: "ETXTBSY", EFBIG: "EFBIG",
        ENOSPC: "ENOSPC", ESPIPE: "ESPIPE", EROFS: "EROFS", EMLINK: "EMLINK", ERANGE: "ERANGE",
        ENAMETOOLONG: "ENAMETOOLONG", ENOSYS: "ENOSYS", ENOTEMPTY: "ENOTEMPTY", ELOOP: "ELOOP",
        ENODATA: "ENODATA", EOPNOTSUPP: "EOPNOTSUPP", ENOTCONN: "ENOTCONN", ECONNABORTED: "ECONNABORTED",
        E2BIG: "E2BIG", ESTALE: "ESTALE", EOVERFLOW: "EOVERFLOW", ENOTSOCK: "ENOTSOCK",
    ]

    static func name(_ code: Int32) -> String {
        names[code] ?? "errno \(code) (\(String(cString: strerror(code))))"
    }
}

/// FNV-1a, to compare file contents without storing them.
func fnv1a(_ bytes: some Sequence<UInt8>) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in bytes {
        hash ^= UInt64(byte)
        hash = hash &* 0x0000_0100_0000_01b3
    }
    return hash
}

/// A file descriptor opened by a scenario, named by the path it was opened with
/// (labels must not contain fd numbers, which differ between the two runs).
struct Handle {
    var fd: Int32
    var name: String
}

/// Runs operations relative to one root directory (through a held directory
/// fd, so ~4 KB relative paths work) and records every outcome in order.
final class ParityRecorder {
    let root: String
    let rootFD: Int32
    private(set) var log: [(label: String, outcome: Outcome)] = []
    private var handles: [Int32] = []

    init(root: String) throws {
        self.root = root
        rootFD = Glibc.open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard rootFD >= 0 else { throw SubprocessError("open \(root): \(Errno.name(errno))") }
    }

    /// Closes every descriptor the scenario left open, and the root.
    func finish() {
        for fd in handles { Glibc.close(fd) }
        handles = []
        Glibc.close(rootFD)
    }

    func absolute(_ path: String) -> String { path.isEmpty || path == "." ? root : root + "/" + path }

    @discardableResult
    func record(_ label: String, _ outcome: Outcome) -> Outcome {
        log.append((label, outcome))
        return outcome
    }

    /// Records a value computed by the scenario itself (a derived fact).
    func note(_ label: String, _ value: String) { record(label, .success(value)) }

    /// Records a libc return value: -1 means failure with `errno`.
    @discardableResult
    func check(_ label: String, _ result: some BinaryInteger, showing value: Bool = false) -> Bool {
        if result == -1 {
            record(label, .failure(errno))
            return false
        }
        record(label, .success(value ? "\(result)" : ""))
        return true
    }

    // MARK: Names

    @discardableResult
    func mkdir(_ path: String, _ mode: mode_t = 0o755) -> Bool {
        check("mkdir \(path) \(octal(mode))", mkdirat(rootFD, path, mode))
    }

    @discardableResult
    func rmdir(_ path: String) -> Bool { check("rmdir \(path)", unlinkat(rootFD, path, AT_REMOVEDIR)) }

    @discardableResult
    func unlink(_ path: String) -> Bool { check("unlink \(path)", unlinkat(rootFD, path, 0)) }

    @discardableResult
    func symlink(_ target: String, _ path: String) -> Bool {
        check("symlink \(path) -> \(target)", symlinkat(target, rootFD, path))
    }

    func readlink(_ path: String, bufferSize: Int = 8192) {
        var buffer = [CChar](repeating: 0, count: bufferSize)
        let n = readlinkat(rootFD, path, &buffer, bufferSize)
        if n < 0 { record("readlink \(path)", .failure(errno)); return }
        let text = String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        record("readlink \(path) (buffer \(bufferSize))", .success("\(n) \(text)"))
    }

    @discardableResult
    func mknod(_ path: String, _ mode: mode_t, _ dev: dev_t = 0) -> Bool {
        check("mknod \(path) \(octal(mode))", mknodat(rootFD, path, mode, dev))
    }

    @discardableResult
    func rename(_ from: String, _ to: String, flags: UInt32 = 0) -> Bool {
        let name = flags == 0 ? "" : flags == clinux_RENAME_NOREPLACE ? " NOREPLACE"
            : flags == clinux_RENAME_EXCHANGE ? " EXCHANGE" : " flags=\(flags)"
        return check("rename\(name) \(from) -> \(to)", clinux_renameat2(rootFD, from, rootFD, to, flags))
    }

    @discardableResult
    func link(_ from: String, _ to: String, follow: Bool = false) -> Bool {
        check("link \(from) -> \(to)\(follow ? " FOLLOW" : "")",
              linkat(rootFD, from, rootFD, to, follow ? clinux_AT_SYMLINK_FOLLOW : 0))
    }

    // MARK: Attributes

    /// lstat (or stat when `follow`) without recording.
    func rawStat(_ path: String, follow: Bool = false) -> Glibc.stat? {
        var st = Glibc.stat()
        guard fstatat(rootFD, path, &st, follow ? 0 : AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        return st
    }

    /// Records the comparable fields of lstat/stat: type, permissions,
    /// nlink, owner, size, blocks (roughly), and the times when asked.
    func stat(_ path: String, follow: Bool = false, times: Bool = false, label: String? = nil) {
        var st = Glibc.stat()
        let label = label ?? "\(follow ? "stat" : "lstat") \(path)"
        guard fstatat(rootFD, path, &st, follow ? 0 : AT_SYMLINK_NOFOLLOW) == 0 else {
            record(label, .failure(errno))
            return
        }
        record(label, describe(st, times: times))
    }

    func fstat(_ handle: Handle, times: Bool = false) {
        var st = Glibc.stat()
        guard Glibc.fstat(handle.fd, &st) == 0 else {
            record("fstat \(handle.name)", .failure(errno))
            return
        }
        record("fstat \(handle.name)", describe(st, times: times))
    }

    func describe(_ st: Glibc.stat, times: Bool) -> Outcome {
        var text = "\(fileType(st.st_mode)) perm=\(octal(st.st_mode & 0o7777)) nlink=\(st.st_nlink) uid=\(st.st_uid) gid=\(st.st_gid)"
        // A directory's size is the backing filesystem's business, but it is passed through.
        text += " size=\(st.st_size)"
        if (st.st_mode & S_IFMT) == S_IFCHR || (st.st_mode & S_IFMT) == S_IFBLK { text += " rdev=\(st.st_rdev)" }
        if times {
            text += " atime=\(st.st_atim.tv_sec).\(st.st_atim.tv_nsec) mtime=\(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec)"
        }
        return .success(text, approx: [.init(name: "blocks", value: Int64(st.st_blocks), tolerance: 8)])
    }

    @discardableResult
    func chmod(_ path: String, _ mode: mode_t) -> Bool {
        check("chmod \(path) \(octal(mode))", fchmodat(rootFD, path, mode, 0))
    }

    @discardableResult
    func chown(_ path: String, _ uid: uid_t, _ gid: gid_t, follow: Bool = true) -> Bool {
        let u = uid == uid_t.max ? "-1" : "\(uid)", g = gid == gid_t.max ? "-1" : "\(gid)"
        return check("\(follow ? "chown" : "lchown") \(path) \(u):\(g)",
                     fchownat(rootFD, path, uid, gid, follow ? 0 : AT_SYMLINK_NOFOLLOW))
    }

    /// utimensat; `nil` times means "both now" (a NULL pointer).
    @discardableResult
    func utimens(_ path: String, _ atime: timespec?, _ mtime: timespec?, follow: Bool = true) -> Bool {
        let label = "utimensat \(path) atime=\(atime.map(show) ?? "-") mtime=\(mtime.map(show) ?? "-")\(follow ? "" : " NOFOLLOW")"
        let flags = follow ? 0 : AT_SYMLINK_NOFOLLOW
        if let atime, let mtime {
            var times = [atime, mtime]
            return check(label, utimensat(rootFD, path, &times, flags))
        }
        return check(label, utimensat(rootFD, path, nil, flags))
    }

    private func show(_ t: timespec) -> String {
        if t.tv_nsec == clinux_UTIME_NOW { return "NOW" }
        if t.tv_nsec == clinux_UTIME_OMIT { return "OMIT" }
        return "\(t.tv_sec).\(t.tv_nsec)"
    }

    @discardableResult
    func truncate(_ path: String, _ length: Int64) -> Bool {
        check("truncate \(path) \(length)", Glibc.truncate(absolute(path), off_t(length)))
    }

    @discardableResult
    func access(_ path: String, _ mode: Int32, flags: Int32 = 0) -> Bool {
        let modeName = mode == F_OK ? "F_OK" : [(R_OK, "R"), (W_OK, "W"), (X_OK, "X")]
            .filter { mode & $0.0 != 0 }.map(\.1).joined() + "_OK"
        return check("access \(path) \(modeName)\(flags == 0 ? "" : " flags=\(flags)")", faccessat(rootFD, path, mode, flags))
    }

    // MARK: Files

    @discardableResult
    func open(_ path: String, _ flags: Int32, _ mode: mode_t = 0o644, label: String? = nil) -> Handle {
        let fd = openat(rootFD, path, flags | O_CLOEXEC, mode)
        let label = label ?? "open \(path) \(openFlags(flags))"
        if fd < 0 {
            record(label, .failure(errno))
        } else {
            handles.append(fd)
            record(label, .success(""))
        }
        return Handle(fd: fd, name: path)
    }

    @discardableResult
    func close(_ handle: Handle) -> Bool {
        handles.removeAll { $0 == handle.fd }
        return check("close \(handle.name)", Glibc.close(handle.fd))
    }

    @discardableResult
    func write(_ handle: Handle, _ text: String) -> Bool { write(handle, Array(text.utf8), label: "\"\(text)\"") }

    @discardableResult
    func write(_ handle: Handle, _ bytes: [UInt8], label: String? = nil) -> Bool {
        let n = bytes.withUnsafeBytes { Glibc.write(handle.fd, $0.baseAddress, $0.count) }
        return check("write \(handle.name) \(label ?? "\(bytes.count) bytes")", n, showing: true)
    }

    @discardableResult
    func pwrite(_ handle: Handle, _ text: String, at offset: Int64) -> Bool {
        let bytes = Array(text.utf8)
        let n = bytes.withUnsafeBytes { Glibc.pwrite(handle.fd, $0.baseAddress, $0.count, off_t(offset)) }
        return check("pwrite \(handle.name) \"\(text)\" at \(offset)", n, showing: true)
    }

    func read(_ handle: Handle, _ count: Int) {
        var buffer = [UInt8](repeating: 0, count: count)
        let n = buffer.withUnsafeMutableBytes { Glibc.read(handle.fd, $0.baseAddress, count) }
        recordBytes("read \(handle.name) \(count)", n, buffer)
    }

    func pread(_ handle: Handle, _ count: Int, at offset: Int64) {
        var buffer = [UInt8](repeating: 0, count: count)
        let n = buffer.withUnsafeMutableBytes { Glibc.pread(handle.fd, $0.baseAddress, count, off_t(offset)) }
        recordBytes("pread \(handle.name) \(count) at \(offset)", n, buffer)
    }

    /// A shared read-write mapping of `length` bytes of `handle`: what it
    /// shows first, then `text` written at its start and synced (msync).
    func mapShared(_ handle: Handle, _ length: Int, writing text: String) {
        let label = "mmap shared \(handle.name) \(length)"
        guard let mapping = Glibc.mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, handle.fd, 0), mapping != MAP_FAILED else {
            record(label, .failure(errno))
            return
        }
        defer { munmap(mapping, length) }
        record(label, .success(showBytes(Array(UnsafeRawBufferPointer(start: mapping, count: length))[...])))
        let bytes = Array(text.utf8)
        bytes.withUnsafeBytes { mapping.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        _ = check("msync \(handle.name)", msync(mapping, length, MS_SYNC))
    }

    private func recordBytes(_ label: String, _ n: Int, _ buffer: [UInt8]) {
        if n < 0 { record(label, .failure(errno)); return }
        record(label, .success(showBytes(buffer[..<n])))
    }

    func showBytes(_ bytes: ArraySlice<UInt8>) -> String {
        if bytes.count <= 64 {
            return "\(bytes.count) bytes \"" + bytes.map { $0 >= 32 && $0 < 127 ? String(UnicodeScalar($0)) : "\\\($0)" }.joined() + "\""
        }
        return "\(bytes.count) bytes fnv=\(String(fnv1a(bytes), radix: 16))"
    }

    /// Reads the whole file at `path` and records its length and content.
    func content(_ path: String) {
        let fd = openat(rootFD, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { record("content \(path)", .failure(errno)); return }
        defer { Glibc.close(fd) }
        var all: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 { record("content \(path)", .failure(errno)); return }
            if n == 0 { break }
            all += buffer[..<n]
        }
        record("content \(path)", .success(showBytes(all[...])))
    }

    @discardableResult
    func lseek(_ handle: Handle, _ offset: Int64, _ whence: Int32) -> Int64 {
        let names = [SEEK_SET: "SET", SEEK_CUR: "CUR", SEEK_END: "END", clinux_SEEK_DATA: "DATA", clinux_SEEK_HOLE: "HOLE"]
        let result = Glibc.lseek(handle.fd, off_t(offset), whence)
        check("lseek \(handle.name) \(offset) SEEK_\(names[whence] ?? "\(whence)")", result, showing: true)
        return Int64(result)
    }

    @discardableResult
    func fsync(_ handle: Handle) -> Bool { check("fsync \(handle.name)", Glibc.fsync(handle.fd)) }
    @discardableResult
    func fdatasync(_ handle: Handle) -> Bool { check("fdatasync \(handle.name)", Glibc.fdatasync(handle.fd)) }
    @discardableResult
    func ftruncate(_ handle: Handle, _ length: Int64) -> Bool {
        check("ftruncate \(handle.name) \(length)", Glibc.ftruncate(handle.fd, off_t(length)))
    }

    @discardableResult
    func fallocate(_ handle: Handle, mode: Int32, _ offset: Int64, _ length: Int64) -> Bool {
        check("fallocate \(handle.name) mode=\(mode) \(offset)+\(length)", clinux_fallocate(handle.fd, mode, offset, length))
    }

    /// copy_file_range until `length` bytes are copied or it returns 0; records the total.
    func copyFileRange(_ from: Handle, at fromOffset: Int64, _ to: Handle, at toOffset: Int64, _ length: Int) {
        var inOffset = fromOffset, outOffset = toOffset, total = 0
        let label = "copy_file_range \(from.name)@\(fromOffset) -> \(to.name)@\(toOffset) \(length)"
        while total < length {
            let n = clinux_copy_file_range(from.fd, &inOffset, to.fd, &outOffset, length - total, 0)
            if n < 0 { record(label, .failure(errno)); return }
            if n == 0 { break }
            total += n
        }
        record(label, .success("copied \(total)"))
    }

    // MARK: Directories

    /// Records the sorted entry names (with `.` and `..`) and their d_type.
    func readdir(_ path: String) {
        let fd = openat(rootFD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { record("readdir \(path)", .failure(errno)); return }
        guard let dir = fdopendir(fd) else { Glibc.close(fd); record("readdir \(path)", .failure(errno)); return }
        defer { closedir(dir) }
        var entries: [String] = []
        errno = 0
        while let entry = Glibc.readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            entries.append("\(name):\(entry.pointee.d_type)")
            errno = 0
        }
        if errno != 0 { record("readdir \(path)", .failure(errno)); return }
        entries.sort()
        let text = entries.count <= 40 ? entries.joined(separator: " ") : "\(entries.count) entries fnv=\(String(fnv1a(Array(entries.joined(separator: "/").utf8)), radix: 16))"
        record("readdir \(path)", .success(text))
    }

    /// Names listed by readdir, unrecorded.
    func names(_ path: String) -> [String] {
        let fd = openat(rootFD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0, let dir = fdopendir(fd) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = Glibc.readdir(dir) {
            names.append(withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            })
        }
        return names
    }

    // MARK: Extended attributes (path based, not following symlinks)

    @discardableResult
    func setxattr(_ path: String, _ name: String, _ value: [UInt8], flags: Int32 = 0) -> Bool {
        let flagName = flags == 0 ? "" : flags == clinux_XATTR_CREATE ? " CREATE" : flags == clinux_XATTR_REPLACE ? " REPLACE" : " flags=\(flags)"
        let r = value.withUnsafeBytes { clinux_lsetxattr(absolute(path), name, $0.baseAddress, $0.count, flags) }
        return check("setxattr \(path) \(name) \(value.count) bytes\(flagName)", r)
    }

    @discardableResult
    func setxattr(_ path: String, _ name: String, _ value: String, flags: Int32 = 0) -> Bool {
        setxattr(path, name, Array(value.utf8), flags: flags)
    }

    /// getxattr with a buffer of `size` bytes (0 = size probe).
    func getxattr(_ path: String, _ name: String, size: Int = 65536) {
        var buffer = [UInt8](repeating: 0, count: max(size, 1))
        let n = buffer.withUnsafeMutableBytes { clinux_lgetxattr(absolute(path), name, size == 0 ? nil : $0.baseAddress, size) }
        let label = "getxattr \(path) \(name) size=\(size)"
        if n < 0 { record(label, .failure(errno)); return }
        record(label, .success(size == 0 ? "\(n)" : showBytes(buffer[..<n])))
    }

    /// fgetxattr on an open handle with a buffer of `size` bytes (0 = size probe).
    func fgetxattr(_ handle: Handle, _ name: String, size: Int = 65536) {
        var buffer = [UInt8](repeating: 0, count: max(size, 1))
        let n = buffer.withUnsafeMutableBytes { clinux_fgetxattr(handle.fd, name, size == 0 ? nil : $0.baseAddress, size) }
        let label = "fgetxattr \(handle.name) \(name) size=\(size)"
        if n < 0 { record(label, .failure(errno)); return }
        record(label, .success(size == 0 ? "\(n)" : showBytes(buffer[..<n])))
    }

    /// listxattr with a buffer of `size` bytes (0 = size probe); names sorted.
    func listxattr(_ path: String, size: Int = 65536) {
        var buffer = [CChar](repeating: 0, count: max(size, 1))
        let n = buffer.withUnsafeMutableBufferPointer { clinux_llistxattr(absolute(path), size == 0 ? nil : $0.baseAddress, size) }
        let label = "listxattr \(path) size=\(size)"
        if n < 0 { record(label, .failure(errno)); return }
        if size == 0 { record(label, .success("\(n)")); return }
        let names = buffer[..<n].split(separator: 0).map { String(decoding: $0.map { UInt8(bitPattern: $0) }, as: UTF8.self) }.sorted()
        record(label, .success(names.joined(separator: ",")))
    }

    @discardableResult
    func removexattr(_ path: String, _ name: String) -> Bool {
        check("removexattr \(path) \(name)", clinux_lremovexattr(absolute(path), name))
    }

    // MARK: Filesystem

    /// statvfs on the root: name limit, block size × count and free space
    /// (roughly: the mount and the native directory share a device unless
    /// a simulated capacity is set).
    func statfs(_ path: String = ".") {
        guard let sv = statvfsOf(absolute(path)) else { record("statvfs \(path)", .failure(errno)); return }
        let bytes = Int64(sv.f_blocks) * Int64(sv.f_frsize)
        let avail = Int64(sv.f_bavail) * Int64(sv.f_frsize)
        let free = Int64(sv.f_bfree) * Int64(sv.f_frsize)
        let slack = max(bytes / 100, 64 << 20)
        record("statvfs \(path)", .success("namemax=\(sv.f_namemax) files=\(sv.f_files)", approx: [
            .init(name: "size", value: bytes, tolerance: 0),
            .init(name: "avail", value: avail, tolerance: slack),
            .init(name: "free", value: free, tolerance: slack),
            .init(name: "ffree", value: Int64(sv.f_ffree), tolerance: max(Int64(sv.f_files) / 100, 10_000)),
        ]))
    }
}

/// statvfs(3), or nil with errno set.
func statvfsOf(_ path: String) -> statvfs? {
    var sv = statvfs()
    return statvfs(path, &sv) == 0 ? sv : nil
}

func octal(_ mode: mode_t) -> String { "0" + String(mode, radix: 8) }

func fileType(_ mode: mode_t) -> String {
    switch mode & S_IFMT {
    case S_IFREG: return "file"
    case S_IFDIR: return "dir"
    case S_IFLNK: return "symlink"
    case S_IFIFO: return "fifo"
    case S_IFSOCK: return "socket"
    case S_IFCHR: return "chardev"
    case S_IFBLK: return "blockdev"
    default: return "type\(mode & S_IFMT)"
    }
}

func openFlags(_ flags: Int32) -> String {
    var parts: [String] = [["O_RDONLY", "O_WRONLY", "O_RDWR", "O_ACCMODE"][Int(flags & O_ACCMODE)]]
    let named: [(Int32, String)] = [
        (O_CREAT, "O_CREAT"), (O_EXCL, "O_EXCL"), (O_TRUNC, "O_TRUNC"), (O_APPEND, "O_APPEND"),
        (O_DIRECTORY, "O_DIRECTORY"), (O_NOFOLLOW, "O_NOFOLLOW"), (O_NONBLOCK, "O_NONBLOCK"),
    ]
    for (bit, name) in named where flags & bit != 0 { parts.append(name) }
    if flags & clinux_O_PATH != 0 { parts.append("O_PATH") }
    return parts.joined(separator: "|")
}
