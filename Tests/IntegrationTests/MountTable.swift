import Foundation

/// One line of `/proc/self/mountinfo`.
struct MountEntry: Equatable {
    var mountpoint: String
    var fstype: String
    var source: String
    var options: String
    /// The superblock's options (FUSE shows `allow_other`, `default_permissions` here).
    var superOptions: String
}

/// Reads the kernel's mount table of this process's mount namespace.
enum MountTable {
    static func entries() -> [MountEntry] {
        guard let text = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
            guard let dash = fields.firstIndex(of: "-"), fields.count > dash + 2, fields.count > 5 else { return nil }
            return MountEntry(mountpoint: unescape(fields[4]), fstype: fields[dash + 1],
                              source: unescape(fields[dash + 2]), options: fields[5],
                              superOptions: fields.count > dash + 3 ? fields[dash + 3] : "")
        }
    }

    /// Every mount stacked on `path`, bottom first.
    static func mounts(at path: String) -> [MountEntry] {
        entries().filter { $0.mountpoint == path }
    }

    static func isMounted(_ path: String) -> Bool { !mounts(at: path).isEmpty }

    /// Mounts at `path` or below it.
    static func mounts(under path: String) -> [MountEntry] {
        entries().filter { $0.mountpoint == path || $0.mountpoint.hasPrefix(path + "/") }
    }

    /// mountinfo escapes space, tab, newline and backslash as `\ooo`.
    static func unescape(_ field: String) -> String {
        var bytes: [UInt8] = []
        let source = Array(field.utf8)
        var i = 0
        while i < source.count {
            if source[i] == UInt8(ascii: "\\"), i + 3 < source.count + 0,
               let value = UInt8(String(decoding: source[(i + 1)...(i + 3)], as: UTF8.self), radix: 8) {
                bytes.append(value)
                i += 4
            } else {
                bytes.append(source[i])
                i += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
