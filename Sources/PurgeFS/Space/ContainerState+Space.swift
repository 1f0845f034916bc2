import Glibc
import PurgeCore
import PurgeSys

/// The device: what is available, and room for writes.
extension ContainerState {
    /// What a request for room gets (`RoomSearch` acts on it).
    typealias Room = RoomAnswer

    /// The space figures now. For a real device this reads the backing
    /// filesystem's free space.
    func status() -> SpaceStatus {
        let backingSpace = readBackingSpace()
        return withBooks { books in Self.currentStatus(books, backing: backingSpace) }
    }

    /// Figures under the lock: writes in flight count as used. The backing
    /// figures are read before taking the lock (a real device needs them;
    /// `capacity` may switch the model between real and simulated at any time).
    private static func currentStatus(_ books: Books, backing: BackingSpace) -> SpaceStatus {
        var status = books.model.status(usage: books.ledger.usage, purgeable: books.ledger.rootTotals.purgeable, backing: backing)
        status.reserve(books.reserved)
        return status
    }

    /// Asks for room for data written over `length` bytes at `offset` of file `id`: what it
    /// may allocate (`AllocationEstimate.write`), never the hole a write
    /// past the end of file leaves (nothing to ask when the ledger does not
    /// count the file). `holeWithin` is asked, outside the lock, only for a
    /// file that may have holes.
    func room(for id: EntryID, writingAt offset: UInt64, length: UInt64, holeWithin: (Range<UInt64>) -> Bool) -> Room {
        guard let file = withBooks({ try? $0.ledger.file(id) }) else { return room(for: 0) }
        let need = AllocationEstimate.write(
            offset: offset, length: length, size: file.size, allocated: file.allocated,
            holeWithin: holeWithin)
        return room(for: need)
    }

    /// Asks for room for `need` more bytes.
    func room(for need: UInt64) -> Room {
        guard need > 0 else { return .granted(0) }
        let backingSpace = readBackingSpace()
        return withBooks { books in
            let status = Self.currentStatus(books, backing: backingSpace)
            if need <= status.available {
                books.reserved = books.reserved.addingClamped(need)
                return .granted(need)
            }
            return status.canFit(need) ? .purgeFirst(status.bytesToFree(for: need)) : .noSpace
        }
    }

    func release(_ amount: UInt64) {
        guard amount > 0 else { return }
        withBooks { $0.reserved -= min($0.reserved, amount) }
    }

    /// How much the monitor should purge now (0: nothing), with its hysteresis.
    func monitorTarget() -> UInt64 {
        let backingSpace = readBackingSpace()
        return withBooks { books in books.monitor.target(for: Self.currentStatus(books, backing: backingSpace)) }
    }

    /// Nothing purgeable is left: the monitor stops until the next drop below the low mark.
    func stopMonitorEpisode() {
        withBooks { $0.monitor.stop() }
    }

    var capacityModel: CapacityModel { withBooks { $0.model } }

    /// Sets `capacity` or `external` (`setfattr` on the root, `purgefs
    /// space`) if the device it leaves passes the rule every door shares
    /// (`CapacityModel.validate`); else changes nothing and throws why.
    func changeDevice(capacity: UInt64? = nil, external: UInt64? = nil) throws(OptionError) {
        let backingSpace = readBackingSpace()
        try withBooks { (books) throws(OptionError) in
            var changed = books.model
            if let capacity { changed.capacity = capacity }
            if let external { changed.external = external }
            try changed.validate(deviceSize: backingSpace.size > 0 ? backingSpace.size : nil)
            books.model = changed
        }
    }

    /// The backing filesystem's size and free space; zero if it cannot be read.
    private func readBackingSpace() -> BackingSpace {
        guard let figures = try? backing.fileSystemStatus() else { return BackingSpace(size: 0, available: 0) }
        let unit = UInt64(figures.f_frsize)
        return BackingSpace(size: UInt64(figures.f_blocks).multipliedClamped(by: unit), available: UInt64(figures.f_bavail).multipliedClamped(by: unit),
                            free: UInt64(figures.f_bfree).multipliedClamped(by: unit))
    }
}
