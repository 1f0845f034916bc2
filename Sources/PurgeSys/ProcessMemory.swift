import CLinux

/// The process's heap.
public enum ProcessMemory {
    /// Hands memory freed on the heap back to the system. Worth it once
    /// after a burst of allocations that are freed again (the tables the
    /// mount-time walk grows by doubling, and what it reads and drops):
    /// glibc keeps such memory for reuse, and it shows as resident.
    /// Wraps `malloc_trim(3)`.
    public static func returnFreedMemory() {
        _ = clinux_malloc_trim()
    }
}
