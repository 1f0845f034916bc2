/// The kernel's mount table as `/proc/self/mountinfo` shows it: how the
/// command tells a purgefs mount from anything else and waits for one to
/// go, and how the adapter refuses to stack on a FUSE mount. Pure text to
/// values; `MountTable.current()` in PurgeSys reads the file.
public struct MountTable: Sendable {
    /// One line of mountinfo (proc(5)).
    public struct Entry: Equatable, Sendable {
        /// Unique mount ID (field 1); a remount at the same path gets a new one.
        public var id: Int
        /// Where it is mounted, with `\040`-style escapes decoded.
        public var mountPoint: String
        /// The filesystem type after the ` - ` separator, e.g. `fuse.purgefs`.
        public var fileSystemType: String
        /// The mount source, e.g. the container path when the adapter sets `fsname`.
        public var source: String
        /// The superblock's options, the last field: FUSE shows `allow_other`
        /// and `default_permissions` here, not in the per-mount options.
        public var superOptions: String
        /// The superblock's device number's minor part (field 3, `major:minor`):
        /// for a FUSE mount, its connection's number in `/sys/fs/fuse/connections`.
        public var deviceMinor: Int?

        public init(id: Int, mountPoint: String, fileSystemType: String, source: String, superOptions: String = "",
                    deviceMinor: Int? = nil) {
            self.deviceMinor = deviceMinor
            self.id = id
            self.mountPoint = mountPoint
            self.fileSystemType = fileSystemType
            self.source = source
            self.superOptions = superOptions
        }

        public var isPurgefs: Bool { fileSystemType == MountTable.purgefsType }

        /// `fuse`, `fuse.<subtype>` or `fuseblk`: a mount served by some FUSE daemon.
        public var isFuse: Bool { fileSystemType.hasPrefix("fuse") }
    }

    /// The type every purgefs mount has: the adapter mounts with `subtype=purgefs`.
    public static let purgefsType = "fuse.purgefs"

    /// In the kernel's order: a mount stacked on another comes after it.
    public var entries: [Entry]

    /// Parses mountinfo text; lines that do not have the documented shape are skipped.
    public init(parsing text: String) {
        entries = text.split(separator: "\n").compactMap(Self.entry)
    }

    /// The topmost mount at exactly `path` (the last one listed), if any.
    public func topmost(at path: String) -> Entry? {
        entries.last { $0.mountPoint == path }
    }

    /// The topmost FUSE mount at exactly `path`, if any: mounting there
    /// would stack on a live (or dead) FUSE daemon.
    public func fuseMount(at path: String) -> Entry? {
        entries.last { $0.mountPoint == path && $0.isFuse }
    }

    /// The purgefs mount that `path` is at or inside, if any (the deepest one).
    public func purgefsMount(containing path: String) -> Entry? {
        entries.filter { $0.isPurgefs && AbsolutePath.relative(path, to: $0.mountPoint) != nil }
            .max { $0.mountPoint.count < $1.mountPoint.count }
    }

    /// Whether the mount with this ID is still there (after an unmount, say).
    public func contains(id: Int) -> Bool { entries.contains { $0.id == id } }

    /// `36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue`
    private static func entry(_ line: Substring) -> Entry? {
        let fields = line.split(separator: " ", omittingEmptySubsequences: false)
        guard fields.count >= 10, let id = Int(fields[0]),
              let separator = fields[6...].firstIndex(of: "-"), separator + 2 < fields.count else { return nil }
        return Entry(id: id, mountPoint: unescape(fields[4]),
                     fileSystemType: unescape(fields[separator + 1]), source: unescape(fields[separator + 2]),
                     superOptions: separator + 3 < fields.count ? String(fields[separator + 3]) : "",
                     deviceMinor: fields[2].split(separator: ":").last.flatMap { Int($0) })
    }

    /// The kernel writes space, tab, newline and backslash in paths as three octal digits (`\040`).
    public static func unescape(_ field: Substring) -> String {
        var bytes: [UInt8] = []
        let input = Array(field.utf8)
        var index = 0
        while index < input.count {
            if input[index] == UInt8(ascii: "\\"), index + 3 < input.count,
               let value = octal(input[index + 1], input[index + 2], input[index + 3]) {
                bytes.append(value)
                index += 4
            } else {
                bytes.append(input[index])
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func octal(_ a: UInt8, _ b: UInt8, _ c: UInt8) -> UInt8? {
        let zero = UInt8(ascii: "0")
        guard (zero...zero + 3).contains(a), (zero...zero + 7).contains(b), (zero...zero + 7).contains(c) else { return nil }
        return (a - zero) * 64 + (b - zero) * 8 + (c - zero)
    }
}
