import Glibc

/// The real-time clock.
public enum WallClock {
    /// Nanoseconds since the epoch. Wraps `clock_gettime(CLOCK_REALTIME)`.
    public static func nanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// Seconds since the epoch, with a fraction.
    public static func seconds() -> Double {
        Double(nanoseconds()) / 1e9
    }
}
