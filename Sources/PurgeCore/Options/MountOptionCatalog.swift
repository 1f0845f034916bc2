/// Every word `-o` accepts, in one place. Each purgefs option is one entry:
/// its name, the placeholder and help that `purgefs mount --help` prints,
/// its default, the field of `MountOptions` it sets and how its value is
/// read into that field and written back. `MountOptions.apply` reads items
/// through the table, `given` records the entries' fields, `--help`'s
/// option list and the checks of REFERENCE and the man page are made from
/// it, so an option's name is written here and nowhere else, and the help
/// cannot list an option the parser refuses or miss one it accepts.
public enum MountOptionCatalog {
    /// One purgefs option.
    public struct Entry: Sendable {
        /// The name before `=`.
        public let name: String
        /// The value placeholder (`SIZE`), or `nil` for a flag.
        public let valueName: String?
        public let summary: String
        public let defaultText: String
        /// The field of `MountOptions` the option sets.
        public let field: MountOptionField
        /// Reads the item's value (`nil`: the bare name) into the field.
        let read: @Sendable (inout MountOptions, String?) throws(OptionError) -> Void
        /// The item that gives the field's value back to `read`, or `nil`
        /// when there is nothing to give (an optional field unset, a flag off).
        let write: @Sendable (MountOptions) -> String?
    }

    /// purgefs's own options, in SPEC's order.
    public static let purgefsOptions: [Entry] = [
        .optional("capacity", "SIZE", \.capacity,
                  "simulated device size; without it the backing filesystem is the device",
                  default: "real device", read: Parse.capacity, write: String.init),
        .value("external", "SIZE", \.external,
               "simulated space used outside the container (other apps); less than capacity",
               default: "0", read: Parse.external, write: String.init),
        .value("low", "SIZE|N%", \.low, "purge when available space drops below this",
               default: "10%", read: Parse.threshold, write: \.exactText),
        .value("high", "SIZE|N%", \.high, "purge until available space is at least this; not below low",
               default: "20%", read: Parse.threshold, write: \.exactText),
        .value("purgeable", "P1:P2", \.purgeableZones,
               "purgeable zones, relative to the container ('purgeable=' for none)",
               default: "Library/Caches:caches:tmp", read: Parse.zones, write: { $0.joined(separator: ":") }),
        .optional("cloud", "DIR|rclone:REMOTE:PATH", \.cloud,
                  "remote store for ubiquitous zones: an absolute path outside the container, or a remote of rclone's",
                  default: "off", read: Parse.cloud, write: \.description),
        .value("ubiquitous", "P1:P2", \.ubiquitousZones,
               "ubiquitous zones, relative to the container ('ubiquitous=' for none)",
               default: "Documents", read: Parse.zones, write: { $0.joined(separator: ":") }),
        .optional("state", "DIR", \.stateDirectory,
                  "where purgefs keeps its state (absolute path); the daemon logs to DIR/daemon.log",
                  default: "CONTAINER/.purgefs", read: Parse.absolute, write: { $0 }),
        .optional("bundle", "P", \.bundle,
                  "the part of the container counted as the app itself in usage and metrics",
                  default: "none", read: Parse.relative, write: { $0 }),
        .value("metrics_interval", "DURATION", \.metricsIntervalSeconds,
               "how often totals are sampled: 30s, 15m, 1h, 1d or seconds",
               default: "1h", read: Parse.duration, write: String.init),
        .flag("optimize_storage", \.optimizeStorage, "under pressure, also evict uploaded ubiquitous files"),
        .flag("crashable", \.crashable,
              "track what is not synced, so purgefs crash can undo it as a power loss would"),
        .optional("record", "DIR", \.record,
                  "record every change to the container, with its data, into DIR (absolute path; what purgefs explore uses); kernel passthrough is then off",
                  default: "off", read: Parse.absolute, write: { $0 }),
        .optional("faults", "FILE", \.faults,
                  "fault rules loaded at mount, one a line as the arguments of purgefs fault add (absolute path)",
                  default: "none", read: Parse.absolute, write: { $0 }),
        .optional("device", "NAME", \.device,
                  "share one simulated device with the other containers mounted with the same NAME",
                  default: "own device", read: Parse.device, write: { $0 }),
        .optional("device_policy", "quota|lru", \.devicePolicy, "how a shared device chooses whose caches to purge",
                  default: "quota", read: Parse.policy, write: \.rawValue),
        .optional("cache_quota", "SIZE", \.cacheQuota, "this container's cache quota on a shared device",
                  default: "from its recent use", read: Parse.size, write: String.init),
        .value("passthrough", "on|off", \.passthrough,
               "kernel passthrough (Linux 6.9+, a root daemon) for files of 128 KiB or more opened read-only (smaller ones are read through the page cache); other opens of a file read that way go through the daemon in direct I/O",
               default: "on", read: Parse.onOrOff, write: { $0 ? "on" : "off" }),
        .value("uring", "on|pinned|off", \.uring,
               "FUSE over io_uring (Linux 6.14+) where the kernel offers it (/sys/module/fuse/parameters/enable_uring): requests come through one ring per CPU instead of /dev/fuse; pinned: each CPU's ring threads stay on it; on: they run on any CPU",
               default: "pinned", read: Parse.ringMode, write: \.rawValue),
    ]

    /// The entry named `name`, if purgefs has such an option.
    public static func entry(named name: String) -> Entry? {
        purgefsOptions.first { $0.name == name }
    }

    /// The name of the option that sets `field`, for messages and for
    /// building an option list. A field no entry sets is a bug.
    public static func name(of field: PartialKeyPath<MountOptions>) -> String {
        guard let entry = purgefsOptions.first(where: { $0.field.keyPath == field }) else {
            preconditionFailure("no mount option sets \(field)")
        }
        return entry.name
    }

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

extension MountOptionCatalog.Entry {
    /// The help's term: `name=PLACEHOLDER`, or the bare name of a flag.
    public var term: String { valueName.map { "\(name)=\($0)" } ?? name }

    /// Reads `value` into `options`' field; a value malformed or missing
    /// (or given to a flag) is an error naming the option.
    public func apply(_ value: String?, to options: inout MountOptions) throws(OptionError) {
        try read(&options, value)
    }

    /// The item (`name=VALUE` or `name`) that sets the field as `options`
    /// has it, or `nil` when there is nothing to set.
    public func item(of options: MountOptions) -> String? { write(options) }

    /// An option with a value, for a field that always has one.
    static func value<Value>(
        _ name: String, _ valueName: String, _ field: WritableKeyPath<MountOptions, Value> & Sendable, _ summary: String,
        default defaultText: String,
        read parse: @escaping @Sendable (_ name: String, _ text: String) throws(OptionError) -> Value,
        write format: @escaping @Sendable (Value) -> String
    ) -> Self {
        Self(name: name, valueName: valueName, summary: summary, defaultText: defaultText, field: MountOptionField(field),
             read: { options, value throws(OptionError) in
                 options[keyPath: field] = try parse(name, try MountOptionCatalog.Parse.required(name, value))
             },
             write: { options in name + "=" + format(options[keyPath: field]) })
    }

    /// An option with a value, for a field that is `nil` until it is given.
    static func optional<Value>(
        _ name: String, _ valueName: String, _ field: WritableKeyPath<MountOptions, Value?> & Sendable, _ summary: String,
        default defaultText: String,
        read parse: @escaping @Sendable (_ name: String, _ text: String) throws(OptionError) -> Value,
        write format: @escaping @Sendable (Value) -> String
    ) -> Self {
        Self(name: name, valueName: valueName, summary: summary, defaultText: defaultText, field: MountOptionField(field),
             read: { options, value throws(OptionError) in
                 options[keyPath: field] = try parse(name, try MountOptionCatalog.Parse.required(name, value))
             },
             write: { options in options[keyPath: field].map { name + "=" + format($0) } })
    }

    /// A flag: the bare name turns the field on; off is the default.
    static func flag(_ name: String, _ field: WritableKeyPath<MountOptions, Bool> & Sendable, _ summary: String) -> Self {
        Self(name: name, valueName: nil, summary: summary, defaultText: "off", field: MountOptionField(field),
             read: { options, value throws(OptionError) in
                 try MountOptionCatalog.Parse.flag(name, value)
                 options[keyPath: field] = true
             },
             write: { options in options[keyPath: field] ? name : nil })
    }
}

/// A field of `MountOptions`, as an entry of the table names it. A key path
/// to a stored property is an immutable value, so it is shared across
/// threads safely, though `PartialKeyPath` is not marked `Sendable`.
public struct MountOptionField: Hashable, @unchecked Sendable {
    public let keyPath: PartialKeyPath<MountOptions>

    public init(_ keyPath: PartialKeyPath<MountOptions>) {
        self.keyPath = keyPath
    }
}
