import CFuse
import CLinux
import Glibc
import PurgeCore
import PurgeSys

/// The write path: anything that grows a file asks for room first, purging
/// least recently used files if it does not fit, and fails with `ENOSPC`
/// from that very call only when nothing purgeable is left. The file's
/// earlier content is untouched by a write that fails.
extension ContainerFileSystem {
    /// Reserves room for data written over `length` bytes at `offset` of
    /// `file`: what that may allocate, never a hole (see
    /// `AllocationEstimate`). Returns the amount reserved, to be released
    /// once the ledger has the file's new figures.
    func makeRoom(for file: OpenFile, writingAt offset: UInt64, length: UInt64) throws(Errno) -> UInt64 {
        try makeRoom {
            state.room(for: file.inode.key, writingAt: offset, length: length) { inside in
                // The next hole at or after the range's start (the end of file counts as one).
                guard let hole = try? file.descriptor.seek(to: Int64(inside.lowerBound), whence: clinux_SEEK_HOLE) else { return true }
                return UInt64(hole) < inside.upperBound
            }
        }
    }

    /// Reserves room for `need` more bytes (a clone's data copied when it
    /// breaks), purging first; `ENOSPC` only when nothing purgeable is left.
    func makeRoom(bytes need: UInt64) throws(Errno) -> UInt64 {
        try makeRoom { state.room(for: need) }
    }

    private func makeRoom(asking room: () -> ContainerState.Room) throws(Errno) -> UInt64 {
        // Observers free what they can before ENOSPC (the cloud tier, with optimize_storage, evicts).
        let reserved = RoomSearch.run(
            ask: room, purge: purgeForRoom,
            evict: { events.needsRoom(1, reason: "write") })
        guard let reserved else { throw Errno.noSpace }
        return reserved
    }

    /// Purges `bytes` for a write: this container's least recently used
    /// files, or on a shared device whoever's its policy picks.
    private func purgeForRoom(_ bytes: UInt64) -> UInt64 {
        device?.purgeForWrite(bytes, self) ?? purger.purge(.bytes(bytes), reason: .write)
    }

    /// What a change to a file's data may allocate, to make room for first.
    enum Allocation {
        /// Data over `length` bytes at `offset` (`write`, `copy_file_range`,
        /// `fallocate` that reserves): the blocks it may allocate, no hole.
        case data(offset: UInt64, length: UInt64)
        /// Nothing: `truncate` (growing makes a hole), punching a hole.
        case none
    }

    /// Runs `body` (a change of `file` that may allocate `allocation`) with
    /// room made for it, then records the file's new figures. A real device
    /// may still be full: on `ENOSPC` the call is retried once after
    /// purging, when `retryable`.
    func growing<T>(
        _ file: OpenFile, allocating allocation: Allocation, retryable: Bool = true, _ body: () throws(Errno) -> T
    ) throws(Errno) -> T {
        let reserved: UInt64
        switch allocation {
        case .data(let offset, let length): reserved = try makeRoom(for: file, writingAt: offset, length: length)
        case .none: reserved = 0
        }
        // Whatever happened, the ledger gets the file's figures as they are now.
        defer {
            noteFigures(of: file)
            state.release(reserved)
        }
        let result: T
        do {
            result = try modifying(file, body)
        } catch where error == .noSpace && retryable {
            // What it reserved, or a little when it looked as if nothing would grow (holes).
            guard purger.purge(.bytes(max(reserved, 1 << 20)), reason: .write) > 0 else { throw error }
            result = try modifying(file, body)
        }
        return result
    }

    /// Records the file's size and allocation after a change.
    func noteFigures(of file: OpenFile) {
        if let status = try? file.descriptor.status() { events.resized(status, id: file.inode.key) }
    }

    /// `write_buf`: returns bytes written.
    func write(_ file: OpenFile, _ data: UnsafeMutablePointer<fuse_bufvec>, at offset: off_t) throws(Errno) -> Int {
        let length = fuse_buf_size(data)
        // Data still in the kernel's pipe cannot be written twice.
        let inMemory = data.pointee.buf.flags.rawValue & FUSE_BUF_IS_FD.rawValue == 0
        let breaking = try makeRoomForBreak(file, length: length)
        defer { state.release(breaking) }
        let written = try growing(file, allocating: .data(offset: UInt64(offset), length: UInt64(length)), retryable: inMemory) { () throws(Errno) -> Int in
            let count = cfuse_write_bufvec_to_fd(data, file.descriptor.rawValue, offset, 1)
            if count < 0 { throw Errno(Int32(-count)) }
            return count
        }
        events.used(file.inode.key)
        return written
    }
}
