import CLinux
import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// A sparse clone member's data as one file (docs/DESIGN.md, "Block sharing
/// without reflinks"): own blocks in its anchor, shared blocks read from the
/// immutable base, as its `BlockMap` says.
///
/// Writes, truncates, syncs and flattening are called under the member's
/// data lock (one at a time); reads take only the view's lock (a leaf, to
/// copy the map, size and base descriptor). A block is marked own only after its copy is in
/// the anchor, so a read in between reads the base or the whole copy.
/// It owns its descriptors (the anchor, the base, bases `rebase` replaced)
/// and closes them when the last reference to it goes: `SparseMembers`
/// lets go of an idle file to bound the daemon's descriptors, and a
/// request still using it keeps them open until it is done.
///
/// The base is trusted only as its stamp (`BaseStamp`, in the map) says:
/// a base found otherwise (written behind the mount) marks the member
/// (`View.baseChanged`), and every read or copy of a shared block then
/// fails with `EIO` instead of returning other bytes.
///
/// Owning its descriptors also means a reader or
/// writer that got it before its member was dropped never reads or writes a
/// closed descriptor, or one whose number another file reuses. Once
/// dropped (`retire`, under the data lock) it changes nothing and makes no
/// record: a record of a member the book no longer has would be replayed
/// in front of a later `start` of its anchor's inode number.
final class SparseMemberFile: Sendable {
    let member: EntryID
    /// The anchor, open for reading and writing.
    let anchor: FileDescriptor
    /// The base, open for reading; never written while a map names it.
    var base: FileDescriptor { snapshot.base }
    let maps: BlockMaps
    private let view: Mutex<View>

    struct View: Sendable {
        var map: BlockMap
        /// Open for reading; `rebase` replaces it (the old one stays open
        /// until the member's release: a read may be using it).
        var base: FileDescriptor
        /// The member's size (the anchor's, but lowered first by a truncate
        /// down, so reads stop there while its blocks are freed).
        var size: UInt64
        /// A truncate down failed half-way (the view at the new size, the
        /// anchor not truncated): every change is refused with `EIO` until
        /// the member is reopened from the journal, whose replay mends it.
        var failed = false
        /// Flattened: the map is dropped and nothing is shared any more
        /// (`sharedLength` 0); the member is its anchor, a plain file.
        var flattened = false
        /// The base as found when it no longer matched the map's stamp
        /// (changed behind the mount): shared blocks fail with `EIO`.
        var baseChanged: BaseStamp?
        /// Its member was dropped (gone, flattened, or its start undone):
        /// every change is refused with `ESTALE`, and nothing is recorded.
        var retired = false
        /// Bases `rebase` replaced, open until this file goes.
        var retiredBases: [FileDescriptor] = []
    }

    private static var blockSize: UInt64 { BlockMap.blockSize }

    private init(member: EntryID, anchor: FileDescriptor, maps: BlockMaps, view: View) {
        self.member = member
        self.anchor = anchor
        self.maps = maps
        self.view = Mutex(view)
    }

    deinit {
        let view = snapshot
        anchor.closeQuietly()
        view.base.closeQuietly()
        for base in view.retiredBases { base.closeQuietly() }
    }

    /// Makes `member` sparse on `base`: its anchor is sized as the base, the
    /// base's partial last block (never shared) copied into it, and the
    /// `start` record queued, with the base's stamp. `sync()` before the
    /// anchor replaces the name. Takes `anchor` and `base` (closed if it throws).
    static func start(
        member: EntryID, anchor: FileDescriptor, base: FileDescriptor, handle: (Int32, [UInt8]), maps: BlockMaps
    ) throws(Errno) -> SparseMemberFile {
        do throws(Errno) {
            let baseStatus = try base.status()
            let size = UInt64(baseStatus.st_size)
            let map = BlockMap(base: EntryID(baseStatus), sharedLength: size, baseStamp: BaseStamp(baseStatus))
            try anchor.truncate(to: 0)
            try anchor.truncate(to: Int64(size))
            if map.sharedLength < size {
                try copy(from: base, to: anchor, offset: map.sharedLength, length: size - map.sharedLength)
            }
            // The base held still while its partial last block was copied.
            guard BaseStamp(try base.status()) == map.baseStamp else { throw Errno.ioError }
            maps.record(.start(
                member: member, base: map.base, sharedLength: map.sharedLength, handleType: handle.0, handle: handle.1,
                stamp: map.baseStamp))
            return SparseMemberFile(member: member, anchor: anchor, maps: maps, view: View(map: map, base: base, size: size))
        } catch {
            anchor.closeQuietly()
            base.closeQuietly()
            throw error
        }
    }

    /// Opens a member the book has a map of (at mount, after replay): a
    /// base that no longer matches the map's stamp marks it (`baseChanged`).
    /// Takes `anchor` and `base` (closed if it throws).
    static func open(member: EntryID, anchor: FileDescriptor, base: FileDescriptor, maps: BlockMaps) throws(Errno) -> SparseMemberFile {
        let file: SparseMemberFile
        do throws(Errno) {
            guard let entry = maps.current(member) else { throw Errno.noEntry }
            guard EntryID(try base.status()) == entry.map.base else { throw Errno(ESTALE) }
            let size = UInt64(try anchor.status().st_size)
            file = SparseMemberFile(member: member, anchor: anchor, maps: maps, view: View(map: entry.map, base: base, size: size))
        } catch {
            anchor.closeQuietly()
            base.closeQuietly()
            throw error
        }
        _ = file.baseIsTrusted()
        return file
    }

    /// Opens a member whose base cannot be opened (its link gone or
    /// replaced behind the mount): marked at once, so its own blocks read
    /// and its shared ones fail with `EIO`, rather than reading its anchor's
    /// holes. Takes `anchor` (closed if it throws).
    static func withoutBase(member: EntryID, anchor: FileDescriptor, maps: BlockMaps, error: Errno) throws(Errno) -> SparseMemberFile {
        let file: SparseMemberFile
        do throws(Errno) {
            guard let entry = maps.current(member) else { throw Errno.noEntry }
            let size = UInt64(try anchor.status().st_size)
            // A stand-in no read reaches: every shared piece fails first.
            let standIn = try anchor.duplicate()
            var view = View(map: entry.map, base: standIn, size: size)
            view.baseChanged = BaseStamp(size: 0, modifiedSeconds: 0, modifiedNanoseconds: 0)
            file = SparseMemberFile(member: member, anchor: anchor, maps: maps, view: view)
            Diagnostics.note(
                "sparse clone \(member): its base \(entry.map.base) cannot be opened (\(error)): reads of the blocks it shares fail with EIO")
        } catch {
            anchor.closeQuietly()
            throw error
        }
        return file
    }

    // MARK: The base's stamp

    /// Whether the base still matches the map's stamp. The first time it
    /// does not, the member is marked (`baseChanged`) and a line logged;
    /// a map without a stamp (journaled before stamps, not yet replayed)
    /// trusts its base.
    func baseIsTrusted() -> Bool {
        let current = snapshot
        guard current.baseChanged == nil else { return false }
        guard let stamped = current.map.baseStamp else { return true }
        let now: BaseStamp
        do throws(Errno) { now = BaseStamp(try current.base.status()) } catch {
            // The base cannot be looked at: nothing read from it is vouched for.
            now = BaseStamp(size: 0, modifiedSeconds: 0, modifiedNanoseconds: 0)
        }
        guard now != stamped else { return true }
        let first = view.withLock { view -> Bool in
            guard view.baseChanged == nil else { return false }
            view.baseChanged = now
            return true
        }
        if first {
            Diagnostics.note(
                "sparse clone \(member): its base \(current.map.base) changed behind the mount (stamped \(stamped), now \(now)): "
                    + "reads of the blocks it shares fail with EIO")
        }
        return false
    }

    /// `EIO` unless the base matches its stamp: after shared bytes were read
    /// (a change racing the read has changed the stamp by the time the read
    /// returns, as a write sets the times before it copies its data).
    private func checkBase() throws(Errno) {
        guard baseIsTrusted() else { throw Errno.ioError }
    }

    /// The base's stamp moved from `before` to `after` by purgefs itself
    /// (the original's times set through the mount): the map is stamped
    /// `after`, durably. Nothing for a member stamped otherwise or found
    /// changed otherwise (its stamp stays the one its shared blocks were
    /// last trusted by); a mark that saw only `after` (a read or an open
    /// while the times were being set) is lifted. Under the data lock.
    func restamp(from before: BaseStamp, to after: BaseStamp) throws(Errno) {
        let current = try changeable()
        guard !current.flattened, current.map.baseStamp == before, current.baseChanged == nil || current.baseChanged == after else {
            return
        }
        view.withLock { view in
            view.map.baseStamp = after
            view.baseChanged = nil
        }
        maps.record(.stamp(member: member, stamp: after))
        try sync()
    }

    var snapshot: View { view.withLock { $0 } }

    /// The view, unless a change failed half-way (`EIO`) or the member
    /// was dropped (`ESTALE`).
    private func changeable() throws(Errno) -> View {
        let current = snapshot
        guard !current.retired else { throw Errno(ESTALE) }
        guard !current.failed else { throw Errno.ioError }
        return current
    }

    /// Its member was dropped (under its data lock): from now on it changes
    /// and records nothing; reads through a reference taken before still
    /// read what it held.
    func retire() {
        view.withLock { $0.retired = true }
    }

    var isRetired: Bool { snapshot.retired }
    var size: UInt64 { snapshot.size }

    // MARK: Reading

    /// Reads up to `buffer.count` bytes at `offset`: own pieces from the
    /// anchor, shared ones from the base; fewer only at the member's end.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws(Errno) -> Int {
        let view = snapshot
        guard offset < view.size, buffer.count > 0 else { return 0 }
        let length = min(UInt64(buffer.count), view.size - offset)
        let pieces = view.map.pieces(offset: offset, length: length)
        let readsBase = pieces.contains { $0.shared }
        if readsBase, view.baseChanged != nil { throw Errno.ioError }
        for piece in pieces {
            let start = Int(piece.offset - offset)
            let slice = UnsafeMutableRawBufferPointer(rebasing: buffer[start..<start + Int(piece.length)])
            let got = try (piece.shared ? view.base : anchor).read(into: slice, at: Int64(piece.offset))
            // An anchor shorter than the view (a truncate down under way) reads as zeros.
            if got < slice.count { slice.baseAddress!.advanced(by: got).initializeMemory(as: UInt8.self, repeating: 0, count: slice.count - got) }
        }
        if readsBase { try checkBase() }
        return Int(length)
    }

    /// `lseek` with `SEEK_DATA` or `SEEK_HOLE` in the member: shared blocks
    /// are data, own ones are what the anchor says. `ENXIO` at or past the end.
    func seek(to offset: UInt64, whence: Int32) throws(Errno) -> UInt64 {
        let view = snapshot
        guard offset < view.size else { throw Errno(ENXIO) }
        let block = BlockMap.blockSize
        var position = offset
        while position < view.size {
            let here = BlockMap.block(of: position)
            if !view.map.isOwn(here) {
                if whence == clinux_SEEK_DATA { return position }
                position = (view.map.shared.first { $0.contains(here) }!.upperBound) * block
                continue
            }
            // Own from `position` up to the next shared run (or the end).
            let nextShared = view.map.shared.first { $0.lowerBound > here }.map { $0.lowerBound * block } ?? view.size
            let limit = min(nextShared, view.size)
            let found: UInt64
            do throws(Errno) {
                found = UInt64(try anchor.seek(to: Int64(position), whence: whence))
            } catch where error == Errno(ENXIO) {
                found = whence == clinux_SEEK_DATA ? UInt64.max : view.size
            }
            if found < limit { return found }
            if whence == clinux_SEEK_HOLE, limit == view.size { return view.size }
            position = limit
        }
        if whence == clinux_SEEK_HOLE { return view.size }
        throw Errno(ENXIO)
    }

    /// Copies the member's bytes, as `read` reads them, into `destination`
    /// (empty): a flat copy for a reader that needs one descriptor (an upload).
    func copy(into destination: FileDescriptor) throws(Errno) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Int(Self.blockSize), alignment: 16)
        defer { buffer.deallocate() }
        var offset: UInt64 = 0
        while true {
            let count = try read(into: buffer, at: offset)
            if count == 0 { break }
            guard try destination.write(UnsafeRawBufferPointer(rebasing: buffer[0..<count]), at: Int64(offset)) == count else {
                throw Errno.noSpace
            }
            offset += UInt64(count)
        }
    }

    // MARK: Changing (under the member's data lock)

    /// Writes `buffer` at `offset`: the shared blocks it touches are copied
    /// from the base first (and marked own, pending), then the bytes written.
    func write(_ buffer: UnsafeRawBufferPointer, at offset: UInt64) throws(Errno) -> Int {
        let current = try changeable()
        guard buffer.count > 0 else { return 0 }
        try makeOwn(current.map.sharedBlocks(offset: offset, length: UInt64(buffer.count)))
        let written = try anchor.write(buffer, at: Int64(offset))
        view.withLock { $0.size = max($0.size, offset + UInt64(written)) }
        return written
    }

    /// Sets the member's size. Down: reads stop at `size` at once, the
    /// shared block `size` falls in is copied, `sharedLength` lowered, the
    /// member synced (so the map no longer claims what is freed), then the
    /// anchor truncated. Up: the anchor grows (own zeros); the map stays.
    func truncate(to size: UInt64) throws(Errno) {
        let current = try changeable()
        if size >= current.size {
            try anchor.truncate(to: Int64(size))
            view.withLock { $0.size = size }
            return
        }
        view.withLock { $0.size = size }
        do throws(Errno) {
            if let block = current.map.blockToCopy(truncatingTo: size) { try makeOwn([block..<block + 1]) }
            let lowered = view.withLock { view -> UInt64? in view.map.truncate(to: size) ? view.map.sharedLength : nil }
            if let lowered {
                maps.record(.sharedLength(member: member, length: lowered))
                try sync()
            }
            try anchor.truncate(to: Int64(size))
        } catch {
            view.withLock { $0.failed = true }
            throw error
        }
    }

    /// Moves the member onto `newBase`, a copy holding the same bytes (the
    /// primary's break copies the old base before writing it): the `base`
    /// record is made durable before this returns, so the caller may then
    /// drop the old base's link and let the primary be written.
    /// Takes `newBase` (closed with this file, or at once if it throws).
    /// The old base is checked against its stamp first: a member whose
    /// base changed keeps its old stamp, which the copy does not match.
    func rebase(to newBase: FileDescriptor) throws(Errno) {
        let status: stat
        let current: View
        do throws(Errno) {
            current = try changeable()
            guard !current.flattened else { throw Errno.invalidArgument }
            status = try newBase.status()
            guard UInt64(status.st_size) >= current.map.sharedLength else { throw Errno.invalidArgument }
        } catch {
            newBase.closeQuietly()
            throw error
        }
        let trusted = baseIsTrusted()
        let identity = EntryID(status)
        let stamp = trusted ? BaseStamp(status) : current.map.baseStamp
        view.withLock { view in
            // The old base stays open (a read may be using it) until this file goes.
            view.retiredBases.append(view.base)
            view.base = newBase
            view.map.base = identity
            view.map.baseStamp = stamp
        }
        maps.record(.rebase(member: member, base: identity, stamp: stamp))
        try sync()
    }

    /// `fallocate(PUNCH_HOLE | KEEP_SIZE)` of [offset, offset + length):
    /// the range reads as zeros. Below `sharedLength` zeros are written (the
    /// shared blocks touched copied first, as for any write), so an own
    /// block there always holds data (`BlockShareCheck`); past it the
    /// anchor is punched.
    func punch(offset: UInt64, length: UInt64) throws(Errno) {
        let current = try changeable()
        let end = min(offset + length, current.size)
        guard offset < end else { return }
        let zeroEnd = min(end, current.map.sharedLength)
        if offset < zeroEnd {
            try makeOwn(current.map.sharedBlocks(offset: offset, length: zeroEnd - offset))
            let zeros = [UInt8](repeating: 0, count: Int(Self.blockSize))
            var position = offset
            while position < zeroEnd {
                let count = Int(min(Self.blockSize, zeroEnd - position))
                let at = Int64(position)
                let written = try zeros.withUnsafeBytes { bytes in
                    Result { () throws(Errno) in try anchor.write(UnsafeRawBufferPointer(rebasing: bytes[..<count]), at: at) }
                }.get()
                guard written == count else { throw Errno.noSpace }
                position += UInt64(count)
            }
        }
        let holeStart = max(offset, current.map.sharedLength)
        if holeStart < end { try anchor.punchHole(offset: Int64(holeStart), length: Int64(end - holeStart)) }
    }

    /// Makes what was written durable: the anchor's data first, then the
    /// member's pending map records (journal appended and synced).
    func sync() throws(Errno) {
        _ = try changeable()
        try anchor.sync(dataOnly: true)
        try maps.commit(member)
    }

    /// Copies every shared block into the anchor, syncs it, then drops the
    /// map (durably): the anchor is a plain file, and this file's changes
    /// go to it alone from then on. The caller drops the base's link when
    /// no map names it any more.
    func flatten() throws(Errno) {
        let current = try changeable()
        guard !current.flattened else { return }
        try makeOwn(current.map.shared)
        try anchor.sync(dataOnly: true)
        view.withLock { view in
            view.map.lowerSharedLength(to: 0)
            view.flattened = true
        }
        maps.record(.drop(member: member))
        try maps.commit(member)
    }

    /// Copies `blocks` (shared) from the base into the anchor, then marks them own.
    /// Refused with `EIO` when the base no longer matches its stamp (before
    /// or after the copy: the copy is then left unclaimed, and punched by
    /// the next mount's replay).
    private func makeOwn(_ blocks: [Range<UInt64>]) throws(Errno) {
        for range in blocks where !range.isEmpty {
            let current = snapshot
            guard current.baseChanged == nil else { throw Errno.ioError }
            try Self.copy(
                from: current.base, to: anchor, offset: range.lowerBound * Self.blockSize, length: UInt64(range.count) * Self.blockSize)
            try checkBase()
            view.withLock { _ = $0.map.makeOwn(range) }
            maps.record(.own(member: member, blocks: range))
        }
    }

    /// Copies bytes [offset, offset + length) between the files, a block at a time.
    private static func copy(from source: FileDescriptor, to destination: FileDescriptor, offset: UInt64, length: UInt64) throws(Errno) {
        var buffer = [UInt8](repeating: 0, count: Int(blockSize))
        var done: UInt64 = 0
        while done < length {
            let count = Int(min(blockSize, length - done))
            let position = Int64(offset + done)
            try buffer.withUnsafeMutableBytes { bytes in
                Result { () throws(Errno) in
                    let chunk = UnsafeMutableRawBufferPointer(rebasing: bytes[..<count])
                    guard try source.read(into: chunk, at: position) == count else { throw Errno.ioError }
                    guard try destination.write(UnsafeRawBufferPointer(chunk), at: position) == count else { throw Errno.noSpace }
                }
            }.get()
            done += UInt64(count)
        }
    }
}
