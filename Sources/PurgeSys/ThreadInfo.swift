import CLinux
import Glibc

/// The kernel's view of this process's threads, for diagnostics.
public enum ThreadInfo {
    /// The calling thread's kernel thread ID. Wraps `gettid(2)`.
    public static var currentID: Int32 { clinux_gettid() }

    /// One line on thread `id` of this process: its state, what it waits in
    /// (`wchan`) and, where readable (root), the top of its kernel stack.
    /// Reads `/proc/self/task/ID/{stat,wchan,stack}`.
    public static func describe(_ id: Int32) -> String {
        let task = "/proc/self/task/\(id)"
        func read(_ name: String) -> String? {
            (try? FileDescriptor.readFile(task + "/" + name, limit: 8192)).map { String(decoding: $0, as: UTF8.self) }
        }
        guard let stat = read("stat"), let close = stat.lastIndex(of: ")") else { return "thread \(id): gone" }
        let state = stat[stat.index(after: close)...].split(separator: " ").first.map(String.init) ?? "?"
        var line = "thread \(id) state \(state)"
        if let wchan = read("wchan"), !wchan.isEmpty, wchan != "0" { line += " in \(wchan)" }
        if let stack = read("stack") {
            let frames = stack.split(separator: "\n").prefix(6).compactMap { $0.split(separator: " ").dropFirst().first }
            if !frames.isEmpty { line += ", kernel stack: " + frames.joined(separator: " <- ") }
        }
        return line
    }
}
