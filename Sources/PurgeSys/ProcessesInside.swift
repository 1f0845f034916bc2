import Glibc

/// Processes that hold a directory tree: their working directory, root or
/// an open file lies inside it. Read from `/proc` (only processes this one
/// may inspect; root sees all).
public enum ProcessesInside {
    public struct Holder: Equatable, Sendable {
        public let pid: Int32
        /// `/proc/PID/comm`.
        public let command: String
    }

    /// Every process but this one (and others running this executable: the
    /// command that started it) with its cwd, root or a descriptor at
    /// `directory` (an absolute canonical path) or below it.
    public static func holding(_ directory: String) -> [Holder] {
        let prefix = directory.hasSuffix("/") ? directory : directory + "/"
        func inside(_ link: String) -> Bool {
            guard let target = readLink(link) else { return false }
            return target == directory || target.hasPrefix(prefix)
        }
        let ownExecutable = readLink("/proc/self/exe")
        let me = getpid()
        var holders: [Holder] = []
        for pid in numericEntries(of: "/proc") where pid != me {
            let base = "/proc/\(pid)"
            if let ownExecutable, readLink(base + "/exe") == ownExecutable { continue }
            var holds = inside(base + "/cwd") || inside(base + "/root")
            if !holds {
                for fd in numericEntries(of: base + "/fd") where inside(base + "/fd/\(fd)") {
                    holds = true
                    break
                }
            }
            if holds { holders.append(Holder(pid: pid, command: command(of: pid))) }
        }
        return holders.sorted { $0.pid < $1.pid }
    }

    /// The command name of `pid` (`/proc/PID/comm`), or `?` when it cannot be read.
    public static func command(of pid: Int32) -> String {
        let fd = open("/proc/\(pid)/comm", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return "?" }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return "?" }
        return String(decoding: buffer[..<count], as: UTF8.self).trimmingNewline
    }

    /// Wraps `readlink(2)`.
    static func readLink(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 4097)
        let count = readlink(path, &buffer, 4096)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The entries of `path` whose names are numbers (pids, descriptors).
    private static func numericEntries(of path: String) -> [Int32] {
        guard let directory = opendir(path) else { return [] }
        defer { closedir(directory) }
        var numbers: [Int32] = []
        while let entry = readdir(directory) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if let number = Int32(name) { numbers.append(number) }
        }
        return numbers
    }
}

private extension String {
    var trimmingNewline: String { hasSuffix("\n") ? String(dropLast()) : self }
}
