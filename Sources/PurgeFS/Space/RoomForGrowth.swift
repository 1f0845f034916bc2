import CLinux
import PurgeCore
import PurgeSys

/// The mount's growth policy: anything that grows a file asks for room
/// first, purging least recently used files if it does not fit (this
/// container's, or on a shared device whoever's its policy picks), then
/// letting observers free what they can (the cloud tier, with
/// `optimize_storage`, evicts), and fails with `ENOSPC` from that very call
/// only when nothing is left. The file's earlier content is untouched by a
/// change that fails.
final class RoomForGrowth: GrowthPolicy {
    private let state: ContainerState
    private let purger: Purger
    private let device: SharedDevice?
    private let clones: any CloneBackend
    private let events: Observers

    init(state: ContainerState, purger: Purger, device: SharedDevice?, clones: any CloneBackend, events: Observers) {
        self.state = state
        self.purger = purger
        self.device = device
        self.clones = clones
        self.events = events
    }

    func reserve(_ growth: Growth, of file: OpenFile, writing: Int) throws(Errno) -> UInt64 {
        let breaking = try reserveForBreak(file, writing: writing)
        guard case .data(let offset, let length) = growth else { return breaking }
        do {
            return try breaking.addingClamped(reserve(file, writingAt: offset, length: length))
        } catch {
            state.release(breaking)
            throw error
        }
    }

    func reserve(bytes: UInt64) throws(Errno) -> UInt64 {
        try search { state.room(for: bytes) }
    }

    func freeRoom(afterNoSpace reserved: UInt64) -> Bool {
        // What it reserved, or a little when it looked as if nothing would grow (holes).
        purger.purge(.bytes(max(reserved, 1 << 20)), reason: .write) > 0
    }

    func release(_ reserved: UInt64) {
        state.release(reserved)
    }

    /// Room for data written over `length` bytes at `offset` of `file`:
    /// what that may allocate, never a hole (see `AllocationEstimate`).
    private func reserve(_ file: OpenFile, writingAt offset: UInt64, length: UInt64) throws(Errno) -> UInt64 {
        try search {
            state.room(for: file.inode.key, writingAt: offset, length: length) { inside in
                // The next hole at or after the range's start (the end of file counts as one).
                guard let hole = try? file.descriptor.seek(to: Int64(inside.lowerBound), whence: clinux_SEEK_HOLE) else { return true }
                return UInt64(hole) < inside.upperBound
            }
        }
    }

    /// Room for what a write of `writing` bytes into a clone may copy
    /// (copy-on-write moves whole blocks); nothing for a file that shares
    /// nothing. Both files are untouched when there is none.
    private func reserveForBreak(_ file: OpenFile, writing: Int) throws(Errno) -> UInt64 {
        guard writing > 0 else { return 0 }
        let need = clones.bytesCopiedOnWrite(of: file.inode.key, length: writing)
        guard need > 0 else { return 0 }
        return try reserve(bytes: need)
    }

    private func search(asking room: () -> ContainerState.Room) throws(Errno) -> UInt64 {
        let reserved = RoomSearch.run(
            ask: room, purge: purgeForRoom,
            evict: { events.needsRoom(1, reason: "write") })
        guard let reserved else { throw Errno.noSpace }
        return reserved
    }

    private func purgeForRoom(_ bytes: UInt64) -> UInt64 {
        device?.purgeForWrite(bytes) ?? purger.purge(.bytes(bytes), reason: .write)
    }
}
