internal import CLinux
import Foundation
import Glibc
import XCTest

// Helpers for the accounting and purging tests: the `user.purgefs.*`
// attributes, an independent walk of the backing container, the purge log,
// and polling against a deadline.

/// `user.purgefs.<name>`.
func pf(_ name: String) -> String { "user.purgefs." + name }

/// What a getxattr returned.
enum XattrOutcome: Equatable, CustomStringConvertible {
    case value(String)
    case failed(Int32)

    var description: String {
        switch self {
        case .value(let text): return "value \(text.debugDescription)"
        case .failed(let code): return Errno.name(code)
        }
    }

    var errorCode: Int32 {
        if case .failed(let code) = self { return code }
        return 0
    }
}

/// lgetxattr with a buffer of `size` bytes (0: the size probe, returned as a decimal string).
func getAttr(_ path: String, _ name: String, size: Int = 4096) -> XattrOutcome {
    if size == 0 {
        let n = clinux_lgetxattr(path, name, nil, 0)
        return n < 0 ? .failed(errno) : .value(String(n))
    }
    var buffer = [UInt8](repeating: 0, count: size)
    let n = buffer.withUnsafeMutableBytes { clinux_lgetxattr(path, name, $0.baseAddress, size) }
    return n < 0 ? .failed(errno) : .value(String(decoding: buffer[..<n], as: UTF8.self))
}

/// lsetxattr; returns 0 or the errno.
@discardableResult
func setAttr(_ path: String, _ name: String, _ value: String, flags: Int32 = 0) -> Int32 {
    let bytes = Array(value.utf8)
    let result = bytes.withUnsafeBytes { clinux_lsetxattr(path, name, $0.baseAddress, $0.count, flags) }
    return result == 0 ? 0 : errno
}

/// The names llistxattr returns.
func listAttrs(_ path: String) -> [String]? {
    let size = clinux_llistxattr(path, nil, 0)
    guard size >= 0 else { return nil }
    var buffer = [CChar](repeating: 0, count: max(size, 1) + 256)
    let n = clinux_llistxattr(path, &buffer, buffer.count)
    guard n >= 0 else { return nil }
    return buffer[..<n].split(separator: 0).map { String(decoding: $0.map { UInt8(bitPattern: $0) }, as: UTF8.self) }
}

/// A numeric purgefs attribute; fails the test (and returns nil) when it cannot be read.
func numberAttr(_ path: String, _ name: String, file: StaticString = #filePath, line: UInt = #line) -> UInt64? {
    switch getAttr(path, pf(name)) {
    case .value(let text):
        guard let number = UInt64(text) else {
            XCTFail("\(pf(name)) of \(path) is not a decimal number: \(text.debugDescription)", file: file, line: line)
            return nil
        }
        return number
    case .failed(let code):
        XCTFail("getxattr \(pf(name)) on \(path): \(Errno.name(code))", file: file, line: line)
        return nil
    }
}

/// Polls `condition` until it holds or `timeout` passes; true when it held.
@discardableResult
func eventually(timeout: TimeInterval = 5, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while true {
        if condition() { return true }
        if Date() > deadline { return false }
        usleep(20_000)
    }
}

/// Writes `bytes` to `path` (created or truncated); returns 0 or the errno.
@discardableResult
func writeBytes(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o644) -> Int32 {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
    guard fd >= 0 else { return errno }
    var done = 0
    while done < bytes.count {
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + done, $0.count - done) }
        if n < 0 {
            let code = errno
            close(fd)
            return code
        }
        done += n
    }
    return close(fd) == 0 ? 0 : errno
}

/// Reads a whole file, or nil.
func readBytes(_ path: String) -> [UInt8]? {
    FileManager.default.contents(atPath: path).map(Array.init)
}

/// Opens, reads to the end and closes: a use of the file through the mount.
func touchByReading(_ path: String) -> Bool {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return false }
    var buffer = [UInt8](repeating: 0, count: 65536)
    while buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
    close(fd)
    return true
}

/// Sets a backing file's access and modification times to `seconds` since the epoch.
func setTimes(_ path: String, _ seconds: Int) {
    var times = [timespec(tv_sec: seconds, tv_nsec: 0), timespec(tv_sec: seconds, tv_nsec: 0)]
    XCTAssertEqual(utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW), 0, "utimensat \(path): \(Errno.name(errno))")
}

func exists(_ path: String) -> Bool {
    var st = stat()
    return lstat(path, &st) == 0
}

func fileSize(_ path: String) -> Int64? {
    var st = stat()
    return lstat(path, &st) == 0 ? Int64(st.st_size) : nil
}

func inodeOf(_ path: String) -> UInt64? {
    var st = stat()
    return lstat(path, &st) == 0 ? UInt64(st.st_ino) : nil
}

func makeDirectories(_ root: String, _ paths: [String], file: StaticString = #filePath, line: UInt = #line) {
    for path in paths {
        XCTAssertEqual(mkdir(root + "/" + path, 0o755) == 0 ? 0 : errno, 0, "mkdir \(path)", file: file, line: line)
    }
}

// MARK: The independent walk

/// Totals of a subtree as the test computes them from the backing store.
struct WalkTotals: Equatable, CustomStringConvertible {
    var size: UInt64 = 0
    var files: UInt64 = 0
    var allocated: UInt64 = 0
    var purgeable: UInt64 = 0

    var description: String { "size \(size) files \(files) allocated \(allocated) purgeable \(purgeable)" }
}

/// A walk of the backing container with lstat, never following a symlink,
/// never entering the top-level `.purgefs`: every regular file with all its
/// names, and every directory.
struct BackingWalk {
    struct FileEntry {
        var size: UInt64
        var allocated: UInt64
        var names: [String]
    }

    /// Regular files by inode.
    var files: [UInt64: FileEntry] = [:]
    /// Directories (relative paths, "" for the root) and their inodes.
    var directories: [String: UInt64] = ["": 0]

    init(_ root: String) {
        var st = stat()
        if lstat(root, &st) == 0 { directories[""] = UInt64(st.st_ino) }
        walk(root, prefix: "")
    }

    private mutating func walk(_ path: String, prefix: String) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return }
        for name in names.sorted() {
            if prefix.isEmpty && name == ".purgefs" { continue }
            let relative = prefix.isEmpty ? name : prefix + "/" + name
            var st = stat()
            guard lstat(path + "/" + name, &st) == 0 else { continue }
            switch st.st_mode & S_IFMT {
            case S_IFDIR:
                directories[relative] = UInt64(st.st_ino)
                walk(path + "/" + name, prefix: relative)
            case S_IFREG:
                let ino = UInt64(st.st_ino)
                files[ino, default: FileEntry(size: UInt64(st.st_size), allocated: UInt64(st.st_blocks) * 512, names: [])]
                    .names.append(relative)
            default:
                break
            }
        }
    }

    static func isBelow(_ path: String, _ directory: String) -> Bool {
        directory.isEmpty || path.hasPrefix(directory + "/")
    }

    /// Whether purging could take this file: every name in a zone, neither
    /// the file nor a directory above any of its names pinned, not open.
    func isPurgeable(_ ino: UInt64, zones: [String], pinned: Set<UInt64>, open: Set<UInt64>) -> Bool {
        guard let entry = files[ino], !open.contains(ino), !pinned.contains(ino) else { return false }
        for name in entry.names {
            guard zones.contains(where: { Self.isBelow(name, $0) && directories[$0] != nil }) else { return false }
            var components = name.split(separator: "/").map(String.init)
            components.removeLast()
            var current = ""
            if let rootIno = directories[""], pinned.contains(rootIno) { return false }
            for component in components {
                current = current.isEmpty ? component : current + "/" + component
                if let dirIno = directories[current], pinned.contains(dirIno) { return false }
            }
        }
        return true
    }

    /// The subtree's totals; a file with several names below it counts once.
    func totals(of directory: String, zones: [String], pinned: Set<UInt64> = [], open: Set<UInt64> = []) -> WalkTotals {
        var totals = WalkTotals()
        for (ino, entry) in files where entry.names.contains(where: { Self.isBelow($0, directory) }) {
            totals.size += entry.size
            totals.files += 1
            totals.allocated += entry.allocated
            if isPurgeable(ino, zones: zones, pinned: pinned, open: open) { totals.purgeable += entry.allocated }
        }
        return totals
    }
}

/// What the mount answers for a directory.
func mountTotals(_ path: String) -> WalkTotals? {
    var totals = WalkTotals()
    for (name, keyPath) in [("size", \WalkTotals.size), ("files", \.files), ("allocated", \.allocated), ("purgeable", \.purgeable)] {
        guard case .value(let text) = getAttr(path, pf(name)), let value = UInt64(text) else { return nil }
        totals[keyPath: keyPath] = value
    }
    return totals
}

// MARK: The purge log

struct PurgeLogLine {
    var time: Double
    var path: String
    var bytes: UInt64
    var size: UInt64
    var lastUsed: Double
    var reason: String
    var action: String
    /// The cloud tier's failures say why (`offline`, an errno, rclone's message).
    var error: String? = nil
}

/// Parses `.purgefs/purge.log`: every line must be a JSON object with the
/// documented fields; a line that is not fails the test.
func readPurgeLog(_ container: String, file: StaticString = #filePath, line: UInt = #line) -> [PurgeLogLine] {
    guard let text = try? String(contentsOfFile: container + "/.purgefs/purge.log", encoding: .utf8) else { return [] }
    var lines: [PurgeLogLine] = []
    for raw in text.split(separator: "\n") {
        guard let object = try? JSONSerialization.jsonObject(with: Data(raw.utf8)) as? [String: Any] else {
            XCTFail("purge.log line is not a JSON object: \(raw)", file: file, line: line)
            continue
        }
        guard let time = (object["time"] as? NSNumber)?.doubleValue,
              let path = object["path"] as? String,
              let bytes = (object["bytes"] as? NSNumber)?.uint64Value,
              let size = (object["size"] as? NSNumber)?.uint64Value,
              let lastUsed = (object["last_used"] as? NSNumber)?.doubleValue,
              let reason = object["reason"] as? String,
              let action = object["action"] as? String
        else {
            XCTFail("purge.log line lacks a field or has a wrong type: \(raw)", file: file, line: line)
            continue
        }
        lines.append(PurgeLogLine(time: time, path: path, bytes: bytes, size: size, lastUsed: lastUsed, reason: reason, action: action,
                                  error: object["error"] as? String))
    }
    return lines
}

// MARK: Fixture additions

extension MountFixture {
    /// `kill -9` of the foreground daemon, then cleans the dead mount.
    func killDaemon(file: StaticString = #filePath, line: UInt = #line) {
        guard let pid = daemonPID else { return XCTFail("no daemon pid", file: file, line: line) }
        XCTAssertEqual(kill(pid, SIGKILL), 0, "kill -9 \(pid)", file: file, line: line)
        for problem in unmount() { XCTFail("after kill -9: \(problem)", file: file, line: line) }
    }

    /// Unmounts and mounts again on the same container with `options`.
    func remount(options: [String], file: StaticString = #filePath, line: UInt = #line) throws {
        for problem in unmount() { XCTFail("unmount before remount: \(problem)", file: file, line: line) }
        try mount(options: options)
    }
}

let MiB = 1 << 20

/// `count` bytes of a 4 KiB pattern repeated: cheap for large files.
func tiled(_ count: Int, seed: UInt64) -> [UInt8] {
    let block = pattern(4096, seed: seed)
    var bytes = [UInt8]()
    bytes.reserveCapacity(count)
    while bytes.count < count { bytes += block.prefix(count - bytes.count) }
    return bytes
}
