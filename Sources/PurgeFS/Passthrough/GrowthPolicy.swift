import PurgeSys

/// What a change to a file's data may allocate, to make room for first.
enum Growth: Sendable {
    /// Data over `length` bytes at `offset` (`write`, `copy_file_range`,
    /// `fallocate` that reserves): the blocks it may allocate, no hole.
    case data(offset: UInt64, length: UInt64)
    /// Nothing: `truncate` (growing makes a hole), punching a hole.
    case none
}

/// Asked by the handlers before a change may make a file take more room,
/// and given back what it reserved once the change is done. The mount
/// registers one (`RoomForGrowth`, in Space/: the room search, which purges
/// this container or the shared device and lets observers evict, and the
/// room copy-on-write of shared data may take), so the write path names no
/// feature.
protocol GrowthPolicy: Sendable {
    /// Reserves room for `growth` of `file`, and for what writing `writing`
    /// bytes into data it shares may copy. Throws `ENOSPC` when no room can
    /// be made; nothing is reserved then.
    func reserve(_ growth: Growth, of file: OpenFile, writing: Int) throws(Errno) -> UInt64
    /// Reserves `bytes` (shared data about to be copied whole).
    func reserve(bytes: UInt64) throws(Errno) -> UInt64
    /// The backing filesystem said `ENOSPC` all the same (a real device
    /// fills too) after `reserved` was reserved: frees what it can. True
    /// when the change is worth trying once more.
    func freeRoom(afterNoSpace reserved: UInt64) -> Bool
    func release(_ reserved: UInt64)
}
