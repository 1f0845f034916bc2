internal import CLinux
import Foundation
import Glibc

/// What a directory tree holds, walked through directory fds (so deep trees
/// beyond PATH_MAX work): one line per entry with its type, permissions,
/// owner, link count, size, content hash, symlink target and user xattrs.
enum TreeSnapshot {
    /// Lines sorted by path. `skipping` names entries of the top directory to leave out.
    static func take(_ root: String, skipping: Set<String> = []) -> [String] {
        let fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return ["cannot open \(root): \(Errno.name(errno))"] }
        var lines: [String] = []
        walk(fd, prefix: "", skipping: skipping, into: &lines)
        close(fd)
        return lines.sorted()
    }

    private static func walk(_ dirFD: Int32, prefix: String, skipping: Set<String>, into lines: inout [String]) {
        let listFD = openat(dirFD, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard listFD >= 0, let dir = fdopendir(listFD) else { return }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != ".", name != "..", !skipping.contains(name) { names.append(name) }
        }
        closedir(dir)
        for name in names.sorted() {
            let path = prefix.isEmpty ? name : prefix + "/" + name
            var st = stat()
            guard fstatat(dirFD, name, &st, AT_SYMLINK_NOFOLLOW) == 0 else {
                lines.append("\(path): lstat \(Errno.name(errno))")
                continue
            }
            var line = "\(path.count > 120 ? "…" + String(path.suffix(100)) + " (\(path.utf8.count) bytes)" : path) \(fileType(st.st_mode)) \(octal(st.st_mode & 0o7777)) \(st.st_uid):\(st.st_gid) nlink=\(st.st_nlink)"
            switch st.st_mode & S_IFMT {
            case S_IFREG:
                line += " size=\(st.st_size)"
                let fd = openat(dirFD, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
                if fd >= 0 {
                    line += " fnv=\(String(hash(fd), radix: 16))" + xattrs(fd)
                    close(fd)
                }
            case S_IFLNK:
                var buffer = [CChar](repeating: 0, count: 4097)
                let n = readlinkat(dirFD, name, &buffer, 4096)
                if n >= 0 { line += " -> " + String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) }
            case S_IFDIR:
                let fd = openat(dirFD, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                if fd >= 0 {
                    line += xattrs(fd)
                    lines.append(line)
                    walk(fd, prefix: path, skipping: [], into: &lines)
                    close(fd)
                    continue
                }
            default:
                break
            }
            lines.append(line)
        }
    }

    private static func hash(_ fd: Int32) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            for byte in buffer[..<n] {
                hash ^= UInt64(byte)
                hash = hash &* 0x0000_0100_0000_01b3
            }
        }
        return hash
    }

    /// ` xattrs=name=fnv,...` for user.* and trusted.* attributes, or "".
    private static func xattrs(_ fd: Int32) -> String {
        var list = [CChar](repeating: 0, count: 65536)
        let proc = "/proc/self/fd/\(fd)"
        let n = clinux_listxattr(proc, &list, list.count)
        guard n > 0 else { return "" }
        let names = list[..<n].split(separator: 0).map { String(decoding: $0.map { UInt8(bitPattern: $0) }, as: UTF8.self) }.sorted()
        let parts = names.map { name -> String in
            var value = [UInt8](repeating: 0, count: 65536)
            let size = value.withUnsafeMutableBytes { clinux_getxattr(proc, name, $0.baseAddress, $0.count) }
            return "\(name)=\(size < 0 ? "?" : String(fnv1a(value[..<size]), radix: 16))"
        }
        return " xattrs=" + parts.joined(separator: ",")
    }
}
