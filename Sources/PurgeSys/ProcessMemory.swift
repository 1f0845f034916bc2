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

    /// Keeps a long-running process with many threads from holding on to
    /// memory it freed: at most `arenas` malloc arenas (glibc's default is
    /// eight a CPU, each keeping its own freed memory), and blocks of
    /// `mappedFrom` bytes or more mapped on their own, so their pages go
    /// back to the system when they are freed. A fixed threshold also stops
    /// glibc's own rule, which raises the threshold to the size of each
    /// mapped block freed (up to 32 MiB): after one freed 1 MiB buffer,
    /// every later one would be carved out of an arena and kept there.
    /// Call it before starting threads. Returns false when glibc refused.
    /// Wraps `mallopt(3)` (`M_ARENA_MAX`, `M_MMAP_THRESHOLD`).
    @discardableResult
    public static func bound(arenas: Int32, mappedFrom: Int32) -> Bool {
        clinux_malloc_bound(arenas, mappedFrom) == 1
    }

    /// The heap's figures (`mallinfo2(3)`).
    public struct Figures: Sendable, Equatable {
        /// Bytes the arenas took from the system (not those mapped on their own).
        public var arenaBytes: UInt64
        /// Bytes allocated in the arenas.
        public var allocatedBytes: UInt64
        /// Blocks mapped on their own, and their bytes.
        public var mappedBlocks: UInt64
        public var mappedBytes: UInt64
    }

    public static var figures: Figures {
        let raw = clinux_heap_figures()
        return Figures(
            arenaBytes: raw.arena_bytes, allocatedBytes: raw.allocated_bytes,
            mappedBlocks: raw.mapped_blocks, mappedBytes: raw.mapped_bytes)
    }
}
