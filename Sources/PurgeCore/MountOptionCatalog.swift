/// Every word `-o` accepts, in one place: the parser checks names against
/// it and `purgefs mount --help` prints it, so the help cannot list an
/// option the parser refuses or miss one it accepts.
public enum MountOptionCatalog {
    /// One purgefs option as the help shows it.
    public struct Entry: Sendable {
        /// The name before `=`.
        public let name: String
        /// The value placeholder (`SIZE`), or `nil` for a flag.
        public let valueName: String?
        public let summary: String
        public let defaultText: String
    }

    /// purgefs's own options, in SPEC's order.
    public static let purgefsOptions: [Entry] = [
        Entry(name: "capacity", valueName: "SIZE",
              summary: "simulated device size; without it the backing filesystem is the device",
              defaultText: "real device"),
        Entry(name: "external", valueName: "SIZE",
              summary: "simulated space used outside the container (other apps); less than capacity",
              defaultText: "0"),
        Entry(name: "low", valueName: "SIZE|N%",
              summary: "purge when available space drops below this",
              defaultText: "10%"),
        Entry(name: "high", valueName: "SIZE|N%",
              summary: "purge until available space is at least this; not below low",
              defaultText: "20%"),
        Entry(name: "purgeable", valueName: "P1:P2",
              summary: "purgeable zones, relative to the container ('purgeable=' for none)",
              defaultText: "Library/Caches:caches:tmp"),
        Entry(name: "cloud", valueName: "DIR|rclone:REMOTE:PATH",
              summary: "remote store for ubiquitous zones: an absolute path outside the container, or a remote of rclone's",
              defaultText: "off"),
        Entry(name: "ubiquitous", valueName: "P1:P2",
              summary: "ubiquitous zones, relative to the container ('ubiquitous=' for none)",
              defaultText: "Documents"),
        Entry(name: "state", valueName: "DIR",
              summary: "where purgefs keeps its state (absolute path); the daemon logs to DIR/daemon.log",
              defaultText: "CONTAINER/.purgefs"),
        Entry(name: "bundle", valueName: "P",
              summary: "the part of the container counted as the app itself in usage and metrics",
              defaultText: "none"),
        Entry(name: "metrics_interval", valueName: "DURATION",
              summary: "how often totals are sampled: 30s, 15m, 1h, 1d or seconds",
              defaultText: "1h"),
        Entry(name: "optimize_storage", valueName: nil,
              summary: "under pressure, also evict uploaded ubiquitous files",
              defaultText: "off"),
        Entry(name: "crashable", valueName: nil,
              summary: "track what is not synced, so purgefs crash can undo it as a power loss would",
              defaultText: "off"),
        Entry(name: "record", valueName: "DIR",
              summary: "record every change to the container, with its data, into DIR (absolute path; what purgefs explore uses); kernel passthrough is then off",
              defaultText: "off"),
        Entry(name: "faults", valueName: "FILE",
              summary: "fault rules loaded at mount, one a line as the arguments of purgefs fault add (absolute path)",
              defaultText: "none"),
        Entry(name: "device", valueName: "NAME",
              summary: "share one simulated device with the other containers mounted with the same NAME",
              defaultText: "own device"),
        Entry(name: "device_policy", valueName: "quota|lru",
              summary: "how a shared device chooses whose caches to purge",
              defaultText: "quota"),
        Entry(name: "cache_quota", valueName: "SIZE",
              summary: "this container's cache quota on a shared device",
              defaultText: "from its recent use"),
        Entry(name: "passthrough", valueName: "on|off",
              summary: "kernel passthrough (Linux 6.9+, a root daemon) for files opened read-only (default on); other opens of a file read that way go through the daemon in direct I/O",
              defaultText: "off"),
        Entry(name: "uring", valueName: "on|pinned|off",
              summary: "FUSE over io_uring (Linux 6.14+) where the kernel offers it (/sys/module/fuse/parameters/enable_uring): requests come through one ring per CPU instead of /dev/fuse; pinned: each CPU's ring threads stay on it; on: they run on any CPU",
              defaultText: "pinned"),
    ]

    /// FUSE and kernel mount flags that libfuse 3.14 accepts, passed through as given.
    public static let passThroughFlags: [String] = [
        "allow_other", "allow_root", "default_permissions", "auto_unmount", "debug",
        "ro", "rw", "suid", "nosuid", "dev", "nodev", "exec", "noexec",
        "async", "sync", "dirsync", "atime", "noatime",
    ]

    /// FUSE and kernel mount options with a value, passed through as given.
    /// (`subtype=` is accepted only as `subtype=purgefs`.)
    public static let passThroughValueOptions: [String] = [
        "fsname", "subtype", "max_read", "context", "fscontext", "defcontext", "rootcontext",
    ]

    /// Words accepted and dropped: fstab and mount(8) bookkeeping that
    /// means nothing to the filesystem, and `relatime`, the kernel's default
    /// for a new mount, which libfuse 3.14 does not know. Also dropped:
    /// `user=NAME`, and any `x-*` or `comment=*`.
    public static let ignoredWords: [String] = [
        "defaults", "auto", "noauto", "nofail", "_netdev", "user", "users", "nouser",
        "owner", "group", "relatime",
    ]

    /// Prefixes of words accepted and dropped (see `ignoredWords`).
    public static let ignoredPrefixes: [String] = ["x-", "comment=", "user="]
}
