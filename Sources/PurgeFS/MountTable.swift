import Glibc

/// Reads the kernel's table of mounts (`/proc/self/mountinfo`).
enum MountTable {
    /// The filesystem type of a FUSE mount whose mount point is exactly
    /// `path`, or nil when none is mounted there.
    static func fuseType(mountedAt path: String) -> String? {
        guard let file = fopen("/proc/self/mountinfo", "re") else { return nil }
        defer { fclose(file) }
        var line: UnsafeMutablePointer<CChar>? = nil
        var capacity = 0
        defer { free(line) }
        var found: String?
        while getline(&line, &capacity, file) > 0 {
            let fields = String(cString: line!).split(separator: " ")
            // id parent major:minor root mountpoint options [optional...] - fstype source superoptions
            guard fields.count > 4, let dash = fields.firstIndex(of: "-"), dash + 1 < fields.count else { continue }
            let type = String(fields[dash + 1])
            if unescape(String(fields[4])) == path && type.hasPrefix("fuse") { found = type }
        }
        return found
    }

    /// mountinfo writes space, tab, newline and backslash as octal escapes.
    static func unescape(_ field: String) -> String {
        var bytes: [UInt8] = []
        var input = Array(field.utf8)[...]
        while let byte = input.popFirst() {
            if byte == UInt8(ascii: "\\"), input.count >= 3,
               let value = UInt8(String(decoding: input.prefix(3), as: UTF8.self), radix: 8) {
                bytes.append(value)
                input = input.dropFirst(3)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
