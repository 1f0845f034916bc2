import Glibc

/// Limits of this process.
public enum ResourceLimits {
    /// Raises the open-descriptor limit as far as allowed: to the system's
    /// ceiling (`fs.nr_open`) for root, to the hard limit otherwise. Returns
    /// the new soft limit. Wraps `getrlimit(2)` / `setrlimit(2)`.
    @discardableResult
    public static func raiseOpenFiles() -> UInt64 {
        var limit = rlimit()
        guard getrlimit(RLIMIT_NOFILE_VALUE, &limit) == 0 else { return 0 }
        var wanted = limit.rlim_max
        if geteuid() == 0, let ceiling = systemCeiling(), ceiling > wanted { wanted = ceiling }
        var raised = rlimit(rlim_cur: wanted, rlim_max: max(wanted, limit.rlim_max))
        if setrlimit(RLIMIT_NOFILE_VALUE, &raised) != 0 {
            raised = rlimit(rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max)
            guard setrlimit(RLIMIT_NOFILE_VALUE, &raised) == 0 else { return UInt64(limit.rlim_cur) }
        }
        return UInt64(raised.rlim_cur)
    }

    /// `RLIMIT_NOFILE` as Glibc's module imports it (an enum on some versions).
    private static var RLIMIT_NOFILE_VALUE: __rlimit_resource_t { __rlimit_resource_t(RLIMIT_NOFILE.rawValue) }

    private static func systemCeiling() -> rlim_t? {
        guard let text = try? FileDescriptor.readFile("/proc/sys/fs/nr_open") else { return nil }
        return rlim_t(String(decoding: text.filter { $0 >= 0x30 && $0 <= 0x39 }, as: UTF8.self))
    }
}

extension ResourceLimits {
    /// The current soft limit on open descriptors. Wraps `getrlimit(2)`.
    public static var openFiles: UInt64 {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        return UInt64(limit.rlim_cur)
    }
}
