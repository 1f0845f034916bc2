/// What one container tells the others of its shared device: its usage,
/// its caches, its quota and use, and the head of its purge order. Each
/// member replaces its own record (`members/KEY`) whole and atomically on
/// each round of its monitor when something changed, so a reader sees an
/// old record or a new one, never half of one; a member killed leaves its
/// last record, which the others ignore once its lock is free.
public struct DeviceMember: Equatable, Sendable {
    /// One item of its purge order: a file, or a group purged as one.
    public struct Item: Equatable, Sendable {
        /// Its recency stamp (wall-clock nanoseconds).
        public var stamp: UInt64
        public var bytes: UInt64
        public init(stamp: UInt64, bytes: UInt64) {
            self.stamp = stamp
            self.bytes = bytes
        }
    }

    /// The container's identity on the device: its backing root's `st_dev:st_ino`.
    public var key: String
    public var processID: Int32
    public var container: String
    public var mountpoint: String
    /// The backing filesystem (`st_dev`).
    public var backing: UInt64
    /// U: the container's physical bytes.
    public var used: UInt64
    /// Logical bytes (for `usage`).
    public var size: UInt64
    /// Bytes purging could free (its caches).
    public var purgeable: UInt64
    /// `cache_quota=`, if given.
    public var cacheQuota: UInt64?
    /// When a file was last used through its mount (wall-clock ns; 0: never).
    public var lastUse: UInt64
    /// Its use: seconds in which a file was opened, read or written through its mount.
    public var activeSeconds: UInt64
    /// The head of its purge order, oldest first (at most `itemLimit`).
    public var items: [Item]

    public static let itemLimit = 512

    public init(key: String, processID: Int32, container: String, mountpoint: String, backing: UInt64,
                used: UInt64 = 0, size: UInt64 = 0, purgeable: UInt64 = 0, cacheQuota: UInt64? = nil,
                lastUse: UInt64 = 0, activeSeconds: UInt64 = 0, items: [Item] = []) {
        self.key = key
        self.processID = processID
        self.container = container
        self.mountpoint = mountpoint
        self.backing = backing
        self.used = used
        self.size = size
        self.purgeable = purgeable
        self.cacheQuota = cacheQuota
        self.lastUse = lastUse
        self.activeSeconds = activeSeconds
        self.items = items
    }

    /// What the device's monitor plans with.
    public func plannerMember(quota: UInt64) -> DevicePlanner.Member {
        DevicePlanner.Member(name: key, cached: purgeable, quota: quota, lastUse: lastUse, items: items)
    }

    public var encoded: [UInt8] {
        var text = "key \(key)\npid \(processID)\nbacking \(backing)\nused \(used)\nsize \(size)\npurgeable \(purgeable)\n"
        if let cacheQuota { text += "quota \(cacheQuota)\n" }
        text += "last_use \(lastUse)\nactive \(activeSeconds)\n"
        text += "items " + items.map { "\($0.stamp):\($0.bytes)" }.joined(separator: ",") + "\n"
        // Paths last: they may hold spaces (a value runs to the end of its line).
        text += "container \(container)\nmountpoint \(mountpoint)\n"
        return Array(text.utf8)
    }

    public init?(decoding data: [UInt8]) {
        guard let member = try? DeviceMember(reading: data) else { return nil }
        self = member
    }

    /// The longest path read back (`PATH_MAX`).
    public static let pathLimit = 4096

    /// Reads a record as hostile input (`DeviceRecordLines`): a key of two
    /// numbers, a pid, sizes at most `DeviceRecordLines.maximumBytes`, at most
    /// `itemLimit` items, absolute paths of at most `pathLimit` bytes.
    public init(reading data: [UInt8]) throws(DeviceRecordError) {
        let lines = try DeviceRecordLines(data)
        let key = try lines.text("key")
        let parts = key.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, (try? parts.map({ (part) throws(DeviceRecordError) in
            try DeviceRecordLines.number(part, maximum: .max, what: "key")
        })) != nil else { throw DeviceRecordError("key \(key.prefix(40)) is not DEVICE:INODE") }
        let pid = try lines.number("pid", maximum: UInt64(Int32.max))
        guard pid > 0 else { throw DeviceRecordError("pid 0") }
        func path(_ name: String) throws(DeviceRecordError) -> String {
            let value = try lines.text(name)
            guard value.hasPrefix("/"), value.utf8.count <= Self.pathLimit else {
                throw DeviceRecordError("\(name) \(value.prefix(40)) is not an absolute path of at most \(Self.pathLimit) bytes")
            }
            return value
        }
        var items: [Item] = []
        let itemsText = lines["items"] ?? ""
        for pair in itemsText.isEmpty ? [] : itemsText.split(separator: ",", omittingEmptySubsequences: false) {
            guard items.count < Self.itemLimit else { throw DeviceRecordError("more than \(Self.itemLimit) items") }
            let parts = pair.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2 else { throw DeviceRecordError("item \(pair.prefix(40)) is not STAMP:BYTES") }
            items.append(Item(stamp: try DeviceRecordLines.number(parts[0], maximum: .max, what: "an item's stamp"),
                              bytes: try DeviceRecordLines.number(parts[1], maximum: DeviceRecordLines.maximumBytes, what: "an item's bytes")))
        }
        self.init(key: key, processID: Int32(pid), container: try path("container"), mountpoint: try path("mountpoint"),
                  backing: try lines.number("backing"), used: try lines.bytes("used"), size: try lines.bytes("size"),
                  purgeable: try lines.bytes("purgeable"), cacheQuota: try lines.optionalBytes("quota"),
                  lastUse: try lines.number("last_use"), activeSeconds: try lines.number("active"), items: items)
    }
}
